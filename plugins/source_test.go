package plugins

import (
	"context"
	"fmt"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

// countingSource yields n records with progress after each.
type countingSource struct{ n int }

func (s countingSource) Read(_ context.Context, _ []string, _ map[string]string, fn func(core.SourceItem) error) error {
	for i := range s.n {
		rec := core.ImportRecord{Threat: core.Threat{UpstreamID: fmt.Sprintf("U-%d", i), Details: core.Details{ThreatDescription: "x"}}}
		if err := fn(core.SourceItem{Record: &rec}); err != nil {
			return err
		}
		if err := fn(core.SourceItem{FilesDone: i + 1, FilesTotal: s.n}); err != nil {
			return err
		}
	}
	return fn(core.SourceItem{Skipped: "last", Reason: "a reason"})
}

// readOnlyServer is a source plugin built before ReadBatches existed.
type readOnlyServer struct {
	pb.UnimplementedSourceServer
	inner *sourceServer
}

func (s readOnlyServer) Read(req *pb.SourceRequest, stream grpc.ServerStreamingServer[pb.SourceItem]) error {
	return s.inner.Read(req, stream)
}

// sourceOver serves srv on an in-memory connection and returns a client.
func sourceOver(t *testing.T, register func(*grpc.Server)) *SourceClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	register(s)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("passthrough:///source", grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return lis.DialContext(ctx)
	}), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &SourceClient{rpc: pb.NewSourceClient(conn)}
}

// The client receives the same items in the same order whether the plugin
// batches them (ReadBatches) or is an older one that only has Read.
func TestSourceBatchesAndFallback(t *testing.T) {
	const n = 700 // several batches of 256 items
	impl := &sourceServer{impl: countingSource{n: n}}
	for name, register := range map[string]func(*grpc.Server){
		"batches":   func(s *grpc.Server) { pb.RegisterSourceServer(s, impl) },
		"read only": func(s *grpc.Server) { pb.RegisterSourceServer(s, readOnlyServer{inner: impl}) },
	} {
		c := sourceOver(t, register)
		var got []string
		err := c.Read(context.Background(), []string{"p"}, nil, func(it core.SourceItem) error {
			switch {
			case it.Record != nil:
				got = append(got, it.Record.Threat.UpstreamID)
			case it.Skipped != "":
				got = append(got, "skipped "+it.Skipped+": "+it.Reason)
			default:
				got = append(got, fmt.Sprintf("%d/%d", it.FilesDone, it.FilesTotal))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != 2*n+1 || got[0] != "U-0" || got[1] != fmt.Sprintf("1/%d", n) || got[2*n-2] != fmt.Sprintf("U-%d", n-1) || got[2*n] != "skipped last: a reason" {
			t.Fatalf("%s: %d items, first %q, last %q", name, len(got), got[:2], got[len(got)-1])
		}
	}
}
