package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/spf13/cobra"

	"github.com/threatd/threatd/cmd/internal/daemon"
	"github.com/threatd/threatd/cmd/internal/gcpace"
	"github.com/threatd/threatd/config"
	"github.com/threatd/threatd/core/api"
)

func serveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon (migrations are applied at start)",
		Args:  cobra.NoArgs,
		RunE:  serve,
	}
	cmd.Flags().String("listen", "", "listen address host:port (config server.listen)")
	cmd.Flags().String("tls-mode", "", "self-signed, files or off (config server.tls.mode)")
	return cmd
}

func serve(cmd *cobra.Command, _ []string) error {
	metrics := api.NewMetrics(version)
	e, err := openEnv(cmd, true, createMissing, metrics.PluginRestarted)
	if err != nil {
		return err
	}
	defer e.close()
	cfg, log := e.cfg, e.log
	ctx := cmd.Context()
	defer gcpace.Start()()

	// The daemon (cmd/internal/daemon): its handler, its image registry and
	// its background services; serve adds the listeners around them.
	d, err := daemon.New(ctx, daemon.Options{Config: cfg, Store: e.store, Log: log, Metrics: metrics, Version: version})
	if err != nil {
		return err
	}
	defer d.Close()
	if cfg.Metrics.Listen != "" {
		stop, err := serveMetrics(cfg.Metrics.Listen, metrics, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	handler := d.Handler

	sc := echo.StartConfig{
		Address:         cfg.Server.Listen,
		HideBanner:      true,
		HidePort:        true,
		GracefulTimeout: 20 * time.Second,
		ListenerAddrFunc: func(addr net.Addr) {
			log.Info("threatd listening", "address", addr.String(), "tls", cfg.Server.TLS.Mode,
				"base_path", cfg.Server.BasePath, "storage", cfg.Storage.Plugin, "version", version)
		},
		BeforeServeFunc: func(s *http.Server) error {
			s.ReadHeaderTimeout = 10 * time.Second
			s.IdleTimeout = 120 * time.Second
			s.MaxHeaderBytes = api.ServerHeaderBytes // the API's own JSON 431 answers first
			s.ErrorLog = serverErrorLog(log)
			return nil
		},
	}
	certFile, keyFile := cfg.Server.TLS.CertFile, cfg.Server.TLS.KeyFile
	if cfg.Server.TLS.Mode != config.TLSOff && cfg.Server.TLS.Mode != config.TLSFiles {
		host, _, _ := net.SplitHostPort(cfg.Server.Listen)
		names := append([]string{host}, cfg.Server.TLS.Names...)
		// The machine's host name, when a certificate can name it: one it
		// could never cover would make a new certificate at every start.
		if h, err := os.Hostname(); err == nil && config.CertName(h) {
			names = append(names, h)
		}
		var created bool
		var cerr error
		certFile, keyFile, created, cerr = api.SelfSignedCert(filepath.Join(cfg.DataDir, "tls"), names)
		if cerr != nil {
			return fmt.Errorf("self-signed TLS certificate: %w", cerr)
		}
		if created {
			log.Info("generated a self-signed TLS certificate", "cert_file", certFile, "names", names)
		}
	}
	if d.OCI != nil {
		stop, err := serveOCI(cfg, d.OCI, certFile, keyFile, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	// The background services run until the HTTP server has drained (a
	// request still in flight may need them); one that fails stops it.
	bgCtx, stopServices := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServices()
	wait, failed := d.Start(bgCtx)
	defer wait()
	ctx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	stopWhenFailed := context.AfterFunc(failed, stopServing)
	defer stopWhenFailed()
	switch cfg.Server.TLS.Mode {
	case config.TLSOff:
		log.Warn("TLS IS OFF: the API is served over plain HTTP and tokens cross the network in clear text; run this only behind a TLS-terminating proxy",
			"listen", cfg.Server.Listen)
		err = sc.Start(ctx, handler)
	case config.TLSFiles:
		err = startTLS(ctx, sc, handler, cfg.Server.TLS.CertFile, cfg.Server.TLS.KeyFile)
	default:
		err = startTLS(ctx, sc, handler, certFile, keyFile)
	}
	stopServices()
	if serr := wait(); serr != nil {
		return serr
	}
	if opErr := (*net.OpError)(nil); errors.As(err, &opErr) && opErr.Op == "listen" {
		return fmt.Errorf("server.listen %s: %w (choose another address with --listen, THREATD_SERVER__LISTEN or server.listen in the configuration file)",
			cfg.Server.Listen, opErr.Err)
	}
	if err != nil {
		return err
	}
	log.Info("threatd stopped: in-flight requests drained")
	return nil
}
