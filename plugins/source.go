package plugins

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

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
		msg := &pb.SourceItem{Skipped: it.Skipped, Reason: it.Reason, FilesDone: int32(it.FilesDone), FilesTotal: int32(it.FilesTotal)}
		if it.Record != nil {
			msg.Record = importRecordToPB(*it.Record)
		}
		return stream.Send(msg)
	}))
}

// SourceClient is the daemon's side of a source plugin.
type SourceClient struct {
	rpc    pb.SourceClient
	closer func()
}

// Read streams the source's items for paths.
func (c *SourceClient) Read(ctx context.Context, paths []string, settings map[string]string, fn func(core.SourceItem) error) error {
	stream, err := c.rpc.Read(ctx, &pb.SourceRequest{Paths: paths, Settings: settings})
	return eachRecv(stream, err, func(m *pb.SourceItem) error {
		it := core.SourceItem{Skipped: m.Skipped, Reason: m.Reason, FilesDone: int(m.FilesDone), FilesTotal: int(m.FilesTotal)}
		if m.Record != nil {
			r := importRecordFromPB(m.Record)
			it.Record = &r
		}
		return fn(it)
	})
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
