// The daemon side of the storage protocol: a port.Store whose every call
// is one RPC to the plugin process (the methods are generated from the
// port: storage_client_gen.go; here the connection and its helpers).

package plugins

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	"google.golang.org/grpc"

	"github.com/threatd/threatd/core/port"
	pb "github.com/threatd/threatd/plugins/proto/v2"
)

// StorageClient is the daemon's side of a storage plugin: a port.Store whose
// every call is one RPC to the plugin process.
type StorageClient struct {
	// rpc is the current plugin process's client: a supervisor replaces it
	// when the process dies and a new one has started (host.go).
	rpc    atomic.Pointer[storageConn]
	closer func() error
}

// Configure opens the plugin's database and returns the backend's name.
func (c *StorageClient) Configure(ctx context.Context, cfg StorageConfig) (string, error) {
	resp, err := c.conn().Configure(ctx, &pb.ConfigureRequest{DSN: cfg.DSN, DataDir: cfg.DataDir, Settings: cfg.Settings, Exclusive: cfg.Exclusive, Create: cfg.Create, CreateEmpty: cfg.CreateEmpty})
	if err != nil {
		return "", fromStatus(err)
	}
	return resp.Backend, nil
}

// eachRecv calls fn with every message of a server stream until its end.
func eachRecv[P any](stream grpc.ServerStreamingClient[P], err error, fn func(*P) error) error {
	if err != nil {
		return fromStatus(err)
	}
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fromStatus(err)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
}

// Close stops the plugin process (when the client came from a Host).
func (c *StorageClient) Close() error {
	if c.closer != nil {
		return c.closer()
	}
	return nil
}

var _ port.Store = (*StorageClient)(nil)

type storageConn struct{ pb.StorageClient }

// conn is the client of the current storage process.
func (c *StorageClient) conn() pb.StorageClient { return c.rpc.Load().StorageClient }

// Once a stream's first item has come, a generated client makes room for
// one item per id asked for (up to idsRoom, the most MaxGetThreats asks),
// or for up to limitRoom of a request's Limit: a limit is a bound, and a
// poll that returns three items should not pay for a thousand
// (storagegen's roomFor).
const (
	idsRoom   = 1000
	limitRoom = 128
)
