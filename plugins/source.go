package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v2"
)

// KindSource is the source plugin kind (threatd-source-<name>).
const KindSource = "source"

type sourcePlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	impl core.Source
}

func (p *sourcePlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterSourceServer(s, &sourceServer{impl: p.impl})
	return nil
}

func (p *sourcePlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &SourceClient{rpc: pb.NewSourceClient(c)}, nil
}

type sourceServer struct {
	pb.UnimplementedSourceServer
	impl core.Source
}

func (s *sourceServer) Read(req *pb.SourceRequest, stream grpc.ServerStreamingServer[pb.SourceItem]) error {
	return toStatus(s.impl.Read(stream.Context(), req.Paths, req.Settings, nil, func(it core.SourceItem) error {
		return stream.Send(sourceItemToPB(it))
	}))
}

// Bounds of one SourceItems message.
const (
	sourceBatchItems = 256
	sourceBatchBytes = 1 << 20
)

// itemBatcher groups a source's items into SourceItems messages.
type itemBatcher struct {
	send  func(*pb.SourceItems) error
	batch *pb.SourceItems
	size  int
}

func (b *itemBatcher) add(it core.SourceItem) error {
	if b.batch == nil {
		b.batch = &pb.SourceItems{}
	}
	if it.Record != nil {
		if _, why := core.CheckImportRecord(it.Record); why != "" {
			// Too large for one message (or for storage): skipped with its
			// reason, and the run goes on.
			it = core.SourceItem{Skipped: core.Shorten(it.Record.Threat.UpstreamID), Reason: why, UpstreamID: it.Record.Threat.UpstreamID}
		}
	}
	n := approxSize(it)
	if len(b.batch.Items) > 0 && (len(b.batch.Items) >= sourceBatchItems || b.size+n > sourceBatchBytes) {
		if err := b.flush(); err != nil {
			return err
		}
		b.batch = &pb.SourceItems{}
	}
	b.batch.Items, b.size = append(b.batch.Items, sourceItemToPB(it)), b.size+n
	return nil
}

func (b *itemBatcher) flush() error {
	if b.batch == nil || len(b.batch.Items) == 0 {
		return nil
	}
	err := b.send(b.batch)
	b.batch, b.size = nil, 0
	return err
}

func (s *sourceServer) ReadBatches(req *pb.SourceRequest, stream grpc.ServerStreamingServer[pb.SourceItems]) error {
	b := itemBatcher{send: stream.Send}
	err := s.impl.Read(stream.Context(), req.Paths, req.Settings, nil, b.add)
	if err == nil {
		err = b.flush()
	}
	return toStatus(err)
}

func (s *sourceServer) ReadKnown(stream grpc.BidiStreamingServer[pb.SourceUp, pb.SourceDown]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	req := first.GetRequest()
	if req == nil {
		return status.Error(codes.InvalidArgument, "ReadKnown: the first message must carry the request")
	}
	// Items and queries share the stream: one Send at a time, and one query
	// in flight, so that each answer the host sends is that query's.
	var sendMu, askMu sync.Mutex
	send := func(m *pb.SourceDown) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	b := itemBatcher{send: func(items *pb.SourceItems) error { return send(&pb.SourceDown{Items: items}) }}
	known := func(ctx context.Context, recs []core.UpstreamVersion) ([]bool, error) {
		askMu.Lock()
		defer askMu.Unlock()
		q := &pb.KnownQuery{Records: make([]*pb.UpstreamVersion, len(recs))}
		for i, r := range recs {
			q.Records[i] = &pb.UpstreamVersion{Source: r.Source, UpstreamIds: r.IDs, Modified: ts(r.Modified)}
		}
		if err := send(&pb.SourceDown{KnownQuery: q}); err != nil {
			return nil, err
		}
		m, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		if m.GetKnown() == nil || len(m.Known.Known) != len(recs) {
			return nil, fmt.Errorf("ReadKnown: the host answered %d of %d records", len(m.GetKnown().GetKnown()), len(recs))
		}
		return m.Known.Known, nil
	}
	err = s.impl.Read(stream.Context(), req.Paths, req.Settings, known, b.add)
	if err == nil {
		err = b.flush()
	}
	return toStatus(err)
}

// approxSize bounds a batch's bytes without marshalling twice: the long
// fields of a record plus room for the short ones.
func approxSize(it core.SourceItem) int {
	n := 512 + len(it.Skipped) + len(it.Reason) + len(it.UpstreamID)
	if r := it.Record; r != nil {
		n += r.ApproxSize()
	}
	return n
}

func sourceItemToPB(it core.SourceItem) *pb.SourceItem {
	msg := &pb.SourceItem{Skipped: it.Skipped, Reason: it.Reason, FilesDone: int32(it.FilesDone), FilesTotal: int32(it.FilesTotal), Unchanged: int32(it.Unchanged), UpstreamId: it.UpstreamID}
	if it.Record != nil {
		msg.Record = importRecordToPB(*it.Record)
	}
	return msg
}

func sourceItemFromPB(m *pb.SourceItem) core.SourceItem {
	it := core.SourceItem{Skipped: m.Skipped, Reason: m.Reason, FilesDone: int(m.FilesDone), FilesTotal: int(m.FilesTotal), Unchanged: max(int(m.Unchanged), 0), UpstreamID: m.UpstreamId}
	if m.Record != nil {
		r := importRecordFromPB(m.Record)
		it.Record = &r
	}
	return it
}

// SourceClient is the daemon's side of a source plugin.
type SourceClient struct {
	rpc    pb.SourceClient
	closer func()
	// noReadKnown: the plugin predates ReadKnown.
	noReadKnown atomic.Bool
}

// errNoReadKnown: the plugin predates ReadKnown.
var errNoReadKnown = errors.New("source plugin: ReadKnown is not implemented")

// Read streams the source's items for paths, many to a message. With known,
// the source may ask it which records are already imported (ReadKnown); a
// plugin without ReadKnown is read with ReadBatches, and one without
// ReadBatches one item per message.
func (c *SourceClient) Read(ctx context.Context, paths []string, settings map[string]string, known core.Known, fn func(core.SourceItem) error) error {
	req := &pb.SourceRequest{Paths: paths, Settings: settings}
	if known != nil && !c.noReadKnown.Load() {
		err := c.readKnown(ctx, req, known, fn)
		if !errors.Is(err, errNoReadKnown) {
			return err
		}
		c.noReadKnown.Store(true)
	}
	stream, err := c.rpc.ReadBatches(ctx, req)
	if err != nil {
		return fromStatus(err)
	}
	first := true
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if first && status.Code(err) == codes.Unimplemented {
			one, err := c.rpc.Read(ctx, req)
			return eachRecv(one, err, func(m *pb.SourceItem) error { return fn(sourceItemFromPB(m)) })
		}
		if err != nil {
			return fromStatus(err)
		}
		first = false
		for _, it := range m.Items {
			if err := fn(sourceItemFromPB(it)); err != nil {
				return err
			}
		}
	}
}

// readKnown reads with ReadKnown, answering the source's queries with known.
func (c *SourceClient) readKnown(ctx context.Context, req *pb.SourceRequest, known core.Known, fn func(core.SourceItem) error) error {
	// Returning early cancels the stream, which ends the source's read.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.ReadKnown(ctx)
	if err != nil {
		return fromStatus(err)
	}
	// A Send to a stream the plugin has ended fails with io.EOF: its
	// status is then what the next Recv returns.
	if err := stream.Send(&pb.SourceUp{Request: req}); err != nil && !errors.Is(err, io.EOF) {
		return fromStatus(err)
	}
	first := true
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if first && status.Code(err) == codes.Unimplemented {
			return errNoReadKnown
		}
		if err != nil {
			return fromStatus(err)
		}
		first = false
		for _, it := range m.GetItems().GetItems() {
			if err := fn(sourceItemFromPB(it)); err != nil {
				return err
			}
		}
		if q := m.GetKnownQuery(); q != nil {
			recs := make([]core.UpstreamVersion, len(q.Records))
			for i, r := range q.Records {
				recs[i] = core.UpstreamVersion{Source: r.Source, IDs: r.UpstreamIds, Modified: fromTS(r.Modified)}
			}
			ans, err := known(ctx, recs)
			if err != nil {
				return err
			}
			if err := stream.Send(&pb.SourceUp{Known: &pb.KnownAnswer{Known: ans}}); err != nil && !errors.Is(err, io.EOF) {
				return fromStatus(err)
			}
		}
	}
}

// Close stops the source process.
func (c *SourceClient) Close() {
	if c.closer != nil {
		c.closer()
	}
}

var _ core.Source = (*SourceClient)(nil)

// ServeSource serves a source as a plugin process; call it from main.
func ServeSource(src core.Source) {
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	ignoreStopSignals()
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{ProtocolVersion: {KindSource: &sourcePlugin{impl: src}}},
		GRPCServer:       goplugin.DefaultGRPCServer,
		Logger:           hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr, JSONFormat: true}),
	})
}

// StartSource starts the source plugin threatd-source-<name>.
func (h *Host) StartSource(name string) (*SourceClient, error) {
	raw, client, err := h.start(KindSource, name, &sourcePlugin{})
	if err != nil {
		return nil, err
	}
	sc, ok := raw.(*SourceClient)
	if !ok {
		client.kill()
		return nil, fmt.Errorf("source plugin %q: unexpected client %T", name, raw)
	}
	sc.closer = client.kill
	return sc, nil
}
