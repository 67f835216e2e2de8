package plugins

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/threatd/threatd/core/port"
	pb "github.com/threatd/threatd/plugins/proto/v2"
)

// StorageConfig is what the daemon tells a storage plugin at Configure.
type StorageConfig struct {
	DSN      string
	DataDir  string
	Settings map[string]string
	// Exclusive is set by a daemon (threatd serve): a backend that allows
	// one daemon per database (SQLite) refuses a second one.
	Exclusive bool
	// Create is set by the commands that make a database (serve, migrate,
	// bootstrap): a missing SQLite file becomes a new database. Other
	// commands are refused one.
	Create bool
	// CreateEmpty is set by threatd migrate alone: an empty SQLite file
	// becomes a new database (any other command refuses it).
	CreateEmpty bool
}

// StorageOpener opens a backend's port.Store from its configuration. It is
// all a storage plugin author writes besides the Store itself.
type StorageOpener func(ctx context.Context, cfg StorageConfig) (port.Store, error)

// StoragePlugin is the go-plugin glue of a storage backend, for serving it
// in process (plugins/plugintest); a plugin binary calls ServeStorage.
func StoragePlugin(backend string, open StorageOpener) goplugin.Plugin {
	return &storagePlugin{backend: backend, open: open}
}

// storagePlugin is the go-plugin glue for the storage kind.
type storagePlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	backend string
	open    StorageOpener
}

func (p *storagePlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterStorageServer(s, &storageServer{backend: p.backend, open: p.open})
	return nil
}

func (p *storagePlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	sc := &StorageClient{}
	sc.rpc.Store(&storageConn{pb.NewStorageClient(c)})
	return sc, nil
}
