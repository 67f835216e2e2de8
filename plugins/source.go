package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
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
	return toStatus(s.impl.Read(stream.Context(), req.Paths, req.Settings, func(it core.SourceItem) error {
		return stream.Send(sourceItemToPB(it))
	}))
}

// Bounds of one ReadBatches message.
const (
	sourceBatchItems = 256
	sourceBatchBytes = 1 << 20
)

func (s *sourceServer) ReadBatches(req *pb.SourceRequest, stream grpc.ServerStreamingServer[pb.SourceItems]) error {
	batch := &pb.SourceItems{}
	size := 0
	flush := func() error {
		if len(batch.Items) == 0 {
			return nil
		}
		err := stream.Send(batch)
		batch, size = &pb.SourceItems{}, 0
		return err
	}
	err := s.impl.Read(stream.Context(), req.Paths, req.Settings, func(it core.SourceItem) error {
		msg := sourceItemToPB(it)
		n := approxSize(it)
		if len(batch.Items) > 0 && (len(batch.Items) >= sourceBatchItems || size+n > sourceBatchBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch.Items, size = append(batch.Items, msg), size+n
		return nil
	})
	if err == nil {
		err = flush()
	}
	return toStatus(err)
}

// approxSize bounds a batch's bytes without marshalling twice: the long
// fields of a record plus room for the short ones.
func approxSize(it core.SourceItem) int {
	n := 512 + len(it.Skipped) + len(it.Reason)
	if r := it.Record; r != nil {
		d := r.Threat.Details
		n += len(d.ThreatDescription) + len(d.PayloadDescription) + len(d.EvidenceReferences) + len(d.VersionInfo)
		for _, s := range d.Tags {
			n += len(s) + 2
		}
		for _, s := range d.Contributors {
			n += len(s) + 2
		}
	}
	return n
}

func sourceItemToPB(it core.SourceItem) *pb.SourceItem {
	msg := &pb.SourceItem{Skipped: it.Skipped, Reason: it.Reason, FilesDone: int32(it.FilesDone), FilesTotal: int32(it.FilesTotal)}
	if it.Record != nil {
		msg.Record = importRecordToPB(*it.Record)
	}
	return msg
}

func sourceItemFromPB(m *pb.SourceItem) core.SourceItem {
	it := core.SourceItem{Skipped: m.Skipped, Reason: m.Reason, FilesDone: int(m.FilesDone), FilesTotal: int(m.FilesTotal)}
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
}

// Read streams the source's items for paths, many to a message; a plugin
// without ReadBatches is read one item per message.
func (c *SourceClient) Read(ctx context.Context, paths []string, settings map[string]string, fn func(core.SourceItem) error) error {
	req := &pb.SourceRequest{Paths: paths, Settings: settings}
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
		client.Kill()
		return nil, fmt.Errorf("source plugin %q: unexpected client %T", name, raw)
	}
	sc.closer = client.Kill
	return sc, nil
}
