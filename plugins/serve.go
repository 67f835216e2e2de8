package plugins

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/threatd/threatd/plugins/proto/v2"
)

// ServeStorage serves a storage backend as a plugin process; call it from
// the plugin's main. backend names the implementation ("sqlite"); open turns
// the daemon's Configure call into a port.Store. It returns when the daemon
// stops the plugin, after closing the store.
func ServeStorage(backend string, open StorageOpener) {
	// The plugin logs JSON to stderr; the host forwards each line into the
	// daemon's structured log.
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	srv := &storageServer{backend: backend, open: open}
	p := &servedStorage{storagePlugin: storagePlugin{backend: backend, open: open}, srv: srv}
	ignoreStopSignals()
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{ProtocolVersion: {KindStorage: p}},
		GRPCServer:       goplugin.DefaultGRPCServer,
		Logger:           hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr, JSONFormat: true}),
	})
	srv.close()
}

// servedStorage registers one storageServer instance, so that ServeStorage
// can close its store when the process is told to stop.
type servedStorage struct {
	storagePlugin
	srv *storageServer
}

func (p *servedStorage) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterStorageServer(s, p.srv)
	return nil
}

// ignoreStopSignals keeps a plugin alive through SIGTERM and SIGINT. systemd
// stops a service by sending SIGTERM to every process of its cgroup at once:
// a storage plugin that died then could not take the daemon's last writes
// (the paid-usage counts it flushes at shutdown were lost). The host stops
// its plugins itself when it is done with them, and the kernel kills them if
// the host dies (proc_linux.go).
func ignoreStopSignals() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
}
