package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/threatd/threatd/config"
	"github.com/threatd/threatd/core/api"
)

// serveOCI serves the firewall's image registry on firewall.oci.listen,
// with the API's TLS, until stop is called. A port that cannot be bound
// stops the start.
func serveOCI(cfg config.Config, handler http.Handler, certFile, keyFile string, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", cfg.Firewall.OCI.Listen)
	if err != nil {
		return nil, fmt.Errorf("firewall.oci.listen: %w (set firewall.oci.listen to another address, or \"\" to turn the image registry off)", err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		MaxHeaderBytes: api.ServerHeaderBytes, ErrorLog: serverErrorLog(log)}
	tlsOn := cfg.Server.TLS.Mode != config.TLSOff
	if tlsOn {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("firewall.oci: TLS: %w", err)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}, Certificates: []tls.Certificate{cert}}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	go func() { _ = srv.Serve(ln) }()
	log.Info("firewall oci listening", "address", ln.Addr().String(), "tls", tlsOn, "upstream", cfg.Firewall.OCI.Upstream)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// serveMetrics serves /metrics over plain HTTP on addr (metrics.listen)
// until stop is called. A port that cannot be bound stops the start: an
// operator who configured metrics would otherwise scrape nothing unawares.
func serveMetrics(addr string, m *api.Metrics, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen: %w (set metrics.listen to another address, or \"\" to turn metrics off)", err)
	}
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: serverErrorLog(log)}
	go func() { _ = srv.Serve(ln) }()
	log.Info("metrics listening", "address", ln.Addr().String(), "path", "/metrics")
	return func() { _ = srv.Close() }, nil
}
