package plugins

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v2"
)

// countingSource yields n records with progress after each. Given known,
// it asks about each window of 100 records first, and yields those known
// as unchanged.
type countingSource struct{ n int }

func (s countingSource) Read(ctx context.Context, _ []string, _ map[string]string, known core.Known, fn func(core.SourceItem) error) error {
	var unchanged []bool
	for i := range s.n {
		id := fmt.Sprintf("U-%d", i)
		if known != nil && i%100 == 0 {
			var ask []core.UpstreamVersion
			for j := i; j < min(i+100, s.n); j++ {
				ask = append(ask, core.UpstreamVersion{Source: "test", IDs: []string{fmt.Sprintf("U-%d", j)}, Modified: time.Unix(int64(j), 0).UTC()})
			}
			var err error
			if unchanged, err = known(ctx, ask); err != nil {
				return err
			}
			if len(unchanged) != len(ask) {
				return fmt.Errorf("known answered %d of %d", len(unchanged), len(ask))
			}
		}
		if unchanged != nil && unchanged[i%100] {
			if err := fn(core.SourceItem{Unchanged: 1}); err != nil {
				return err
			}
		} else {
			rec := core.ImportRecord{Threat: core.Threat{UpstreamID: id, Details: core.Details{ThreatDescription: "x"}}}
			if err := fn(core.SourceItem{Record: &rec}); err != nil {
				return err
			}
		}
		if err := fn(core.SourceItem{FilesDone: i + 1, FilesTotal: s.n}); err != nil {
			return err
		}
	}
	return fn(core.SourceItem{Skipped: "last", Reason: "a reason"})
}

// batchesOnlyServer is a source plugin built before ReadKnown existed.
type batchesOnlyServer struct {
	pb.UnimplementedSourceServer
	inner *sourceServer
}

func (s batchesOnlyServer) Read(req *pb.SourceRequest, stream grpc.ServerStreamingServer[pb.SourceItem]) error {
	return s.inner.Read(req, stream)
}

func (s batchesOnlyServer) ReadBatches(req *pb.SourceRequest, stream grpc.ServerStreamingServer[pb.SourceItems]) error {
	return s.inner.ReadBatches(req, stream)
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

// collect reads c with known and returns what it yielded, one line each.
func collect(t *testing.T, c *SourceClient, known core.Known) []string {
	t.Helper()
	var got []string
	err := c.Read(context.Background(), []string{"p"}, nil, known, func(it core.SourceItem) error {
		switch {
		case it.Unchanged > 0:
			got = append(got, fmt.Sprintf("unchanged %d", it.Unchanged))
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
		t.Fatal(err)
	}
	return got
}

// The client receives the same items in the same order whether the plugin
// batches them (ReadBatches) or is an older one that only has Read; and a
// plugin without ReadKnown is read with ReadBatches when the host has a
// known to offer.
func TestSourceBatchesAndFallback(t *testing.T) {
	const n = 700 // several batches of 256 items
	impl := &sourceServer{impl: countingSource{n: n}}
	calls := 0
	known := func(context.Context, []core.UpstreamVersion) ([]bool, error) {
		calls++
		return nil, errors.New("a plugin without ReadKnown cannot ask")
	}
	for name, register := range map[string]func(*grpc.Server){
		"batches":      func(s *grpc.Server) { pb.RegisterSourceServer(s, impl) },
		"batches only": func(s *grpc.Server) { pb.RegisterSourceServer(s, batchesOnlyServer{inner: impl}) },
		"read only":    func(s *grpc.Server) { pb.RegisterSourceServer(s, readOnlyServer{inner: impl}) },
	} {
		c := sourceOver(t, register)
		var k core.Known
		if name != "batches" {
			k = known
		}
		got := collect(t, c, k)
		if len(got) != 2*n+1 || got[0] != "U-0" || got[1] != fmt.Sprintf("1/%d", n) || got[2*n-2] != fmt.Sprintf("U-%d", n-1) || got[2*n] != "skipped last: a reason" {
			t.Fatalf("%s: %d items, first %q, last %q", name, len(got), got[:2], got[len(got)-1])
		}
	}
	if calls != 0 {
		t.Fatalf("known was asked %d times by plugins without ReadKnown", calls)
	}
}

// With ReadKnown the source's queries reach the host's known, their
// answers come back in order, and the items the source yields around them
// arrive in order too.
func TestSourceReadKnown(t *testing.T) {
	const n = 700
	c := sourceOver(t, func(s *grpc.Server) { pb.RegisterSourceServer(s, &sourceServer{impl: countingSource{n: n}}) })
	queries := 0
	got := collect(t, c, func(_ context.Context, recs []core.UpstreamVersion) ([]bool, error) {
		queries++
		out := make([]bool, len(recs))
		for i, r := range recs {
			// Known: the records with an even modified second.
			out[i] = r.Source == "test" && len(r.IDs) == 1 && r.Modified.Unix()%2 == 0 && r.IDs[0] == fmt.Sprintf("U-%d", r.Modified.Unix())
		}
		return out, nil
	})
	if queries != 7 {
		t.Fatalf("%d queries, want 7 (one per 100 records)", queries)
	}
	if len(got) != 2*n+1 {
		t.Fatalf("%d items, want %d", len(got), 2*n+1)
	}
	for i := range n {
		want := fmt.Sprintf("U-%d", i)
		if i%2 == 0 {
			want = "unchanged 1"
		}
		if got[2*i] != want || got[2*i+1] != fmt.Sprintf("%d/%d", i+1, n) {
			t.Fatalf("item %d: %q %q, want %q", i, got[2*i], got[2*i+1], want)
		}
	}

	// A failing known ends the read with its error.
	err := c.Read(context.Background(), []string{"p"}, nil, func(context.Context, []core.UpstreamVersion) ([]bool, error) {
		return nil, errors.New("store down")
	}, func(core.SourceItem) error { return nil })
	if err == nil || err.Error() != "store down" {
		t.Fatalf("failing known: %v", err)
	}
}
