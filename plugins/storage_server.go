// The plugin side of the storage protocol: a port.Store served over gRPC
// (the shims are generated from the port: storage_server_gen.go; here the
// store they reach and its errors).

package plugins

import (
	"context"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/threatd/threatd/core/port"
	pb "github.com/threatd/threatd/plugins/proto/v2"
)

// storageServer serves a port.Store over the storage protocol.
type storageServer struct {
	pb.UnimplementedStorageServer
	backend string
	open    StorageOpener

	mu    sync.RWMutex
	store port.Store
}

func (s *storageServer) get() (port.Store, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.store == nil {
		return nil, status.Error(codes.FailedPrecondition, "storage plugin not configured: Configure must be called first")
	}
	return s.store, nil
}

func (s *storageServer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store != nil {
		_ = s.store.Close()
		s.store = nil
	}
}

func (s *storageServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureReply, error) {
	st, err := s.open(ctx, StorageConfig{DSN: req.DSN, DataDir: req.DataDir, Settings: req.Settings, Exclusive: req.Exclusive, Create: req.Create, CreateEmpty: req.CreateEmpty})
	if err != nil {
		return nil, toStatus(err)
	}
	s.mu.Lock()
	old := s.store
	s.store = st
	s.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return &pb.ConfigureReply{Backend: s.backend}, nil
}

// withStore runs fn on the configured store and turns its error into a
// typed gRPC status.
func withStore[R any](s *storageServer, fn func(port.Store) (R, error)) (R, error) {
	var zero R
	st, err := s.get()
	if err != nil {
		return zero, err
	}
	r, err := fn(st)
	if err != nil {
		return zero, toStatus(classify(st, err))
	}
	return r, nil
}

// classify lets a store say which of its errors mean a damaged database
// (core.ErrCorrupt), e.g. storage.Store.Classify.
func classify(st port.Store, err error) error {
	if c, ok := st.(interface{ Classify(error) error }); ok {
		return c.Classify(err)
	}
	return err
}
