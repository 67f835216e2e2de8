package plugins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

// KindExporter is the exporter plugin kind (threatd-exporter-<name>).
const KindExporter = "exporter"

// ExportRecord, ExportRequest and Document are core's export types.
type (
	ExportRecord  = core.ExportRecord
	ExportRequest = core.ExportRequest
	Document      = core.Document
)

// Exporter turns records into a document.
type Exporter interface {
	Export(ctx context.Context, req ExportRequest) (Document, error)
}

// ExporterFunc adapts a function to Exporter.
type ExporterFunc func(ctx context.Context, req ExportRequest) (Document, error)

// Export calls f.
func (f ExporterFunc) Export(ctx context.Context, req ExportRequest) (Document, error) {
	return f(ctx, req)
}

type exporterPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	name, description string
	impl              Exporter
}

func (p *exporterPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterExporterServer(s, &exporterServer{p: p})
	return nil
}

func (p *exporterPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &ExporterClient{rpc: pb.NewExporterClient(c)}, nil
}

type exporterServer struct {
	pb.UnimplementedExporterServer
	p *exporterPlugin
}

func (s *exporterServer) Info(context.Context, *pb.ExporterInfoRequest) (*pb.ExporterInfo, error) {
	return &pb.ExporterInfo{Name: s.p.name, Description: s.p.description}, nil
}

// chunkSize bounds one document message.
const chunkSize = 1 << 20

func (s *exporterServer) Export(stream grpc.BidiStreamingServer[pb.ExportInput, pb.DocumentChunk]) error {
	var req ExportRequest
	for {
		in, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch item := in.Item.(type) {
		case *pb.ExportInput_Params:
			req.Endpoint, req.Query, req.Service = item.Params.Endpoint, item.Params.Query, item.Params.Service
		case *pb.ExportInput_Record:
			rec := ExportRecord{Threat: threatFromPB(item.Record.Threat)}
			for _, i := range item.Record.Iocs {
				rec.IOCs = append(rec.IOCs, core.IOC{Type: i.Type, Value: i.Value, Detail: i.Detail, Versions: i.Versions,
					Origin: i.Origin, Confidence: int(i.Confidence)})
			}
			req.Records = append(req.Records, rec)
		}
	}
	doc, err := s.p.impl.Export(stream.Context(), req)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	first := true
	for len(doc.Body) > 0 || first {
		n := min(len(doc.Body), chunkSize)
		msg := &pb.DocumentChunk{Data: doc.Body[:n]}
		if first {
			msg.ContentType, first = doc.ContentType, false
		}
		if err := stream.Send(msg); err != nil {
			return err
		}
		doc.Body = doc.Body[n:]
	}
	return nil
}

// ExporterClient is the daemon's side of an exporter plugin.
type ExporterClient struct {
	rpc pb.ExporterClient
}

// Export streams the request to the exporter and collects the document.
func (c *ExporterClient) Export(ctx context.Context, req ExportRequest) (Document, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Export(ctx)
	if err != nil {
		return Document{}, err
	}
	send := func(in *pb.ExportInput) error { return stream.Send(in) }
	if err := send(&pb.ExportInput{Item: &pb.ExportInput_Params{Params: &pb.ExportParams{Endpoint: req.Endpoint, Query: req.Query, Service: req.Service}}}); err != nil {
		return Document{}, err
	}
	for _, r := range req.Records {
		rec := &pb.ExportRecord{Threat: threatToPB(r.Threat)}
		for _, i := range r.IOCs {
			rec.Iocs = append(rec.Iocs, &pb.IOC{Type: i.Type, Value: i.Value, Detail: i.Detail, Versions: i.Versions,
				Origin: i.Origin, Confidence: int32(i.Confidence)})
		}
		if err := send(&pb.ExportInput{Item: &pb.ExportInput_Record{Record: rec}}); err != nil {
			break // the error surfaces from Recv below
		}
	}
	if err := stream.CloseSend(); err != nil {
		return Document{}, err
	}
	var doc Document
	var body bytes.Buffer
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			doc.Body = body.Bytes()
			return doc, nil
		}
		if err != nil {
			return Document{}, err
		}
		if chunk.ContentType != "" {
			doc.ContentType = chunk.ContentType
		}
		body.Write(chunk.Data)
	}
}

// ServeExporter serves an exporter as a plugin process; call it from main.
func ServeExporter(name, description string, e Exporter) {
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	ignoreStopSignals()
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{ProtocolVersion: {KindExporter: &exporterPlugin{name: name, description: description, impl: e}}},
		GRPCServer:       goplugin.DefaultGRPCServer,
		Logger:           hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr, JSONFormat: true}),
	})
}

// The exporter errors are core's.
var (
	ErrExporterUnavailable = core.ErrExporterUnavailable
	ErrExporterFailed      = core.ErrExporterFailed
	ErrExporterTimeout     = core.ErrExporterTimeout
)

// ExporterWait bounds how long a request waits for an exporter that is
// still starting (core.ErrExporterTimeout after it: 504).
const ExporterWait = 10 * time.Second

// Exporters starts and keeps exporter plugin processes, one per name, in the
// background: the API serves at once, an exporter that is slow or hangs at
// its handshake delays only its own requests (each waits at most
// ExporterWait), and one that has exited is restarted on its next use.
type Exporters struct {
	host  *Host
	mu    sync.Mutex
	slots map[string]*exporterSlot
}

// exporterSlot is one exporter's process and the state of its start.
type exporterSlot struct {
	running  *runningExporter
	starting chan struct{} // non-nil while a start is under way; closed when it ends
	lastErr  error
}

type runningExporter struct {
	client *plugin
	rpc    *ExporterClient
}

// NewExporters returns an exporter pool over host.
func NewExporters(host *Host) *Exporters {
	return &Exporters{host: host, slots: map[string]*exporterSlot{}}
}

// Start starts the named exporters in the background and returns at once;
// one that cannot start is logged, and its endpoints answer 503 until it can.
func (x *Exporters) Start(names []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, n := range names {
		x.startLocked(n)
	}
}

// States describes each exporter for /healthz: ready, starting or
// unavailable.
func (x *Exporters) States() map[string]string {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make(map[string]string, len(x.slots))
	for n, sl := range x.slots {
		switch {
		case sl.running != nil && !sl.running.client.exited():
			out[n] = "ready"
		case sl.starting != nil:
			out[n] = "starting"
		case sl.running != nil:
			out[n] = "exited (restarted on its next request)"
		default:
			out[n] = "unavailable"
		}
	}
	return out
}

// startLocked begins a start of name unless one is under way; x.mu is held.
func (x *Exporters) startLocked(name string) chan struct{} {
	sl := x.slots[name]
	if sl == nil {
		sl = &exporterSlot{}
		x.slots[name] = sl
	}
	if sl.starting != nil {
		return sl.starting
	}
	done := make(chan struct{})
	sl.starting = done
	go func() {
		raw, p, err := x.host.start(KindExporter, name, &exporterPlugin{})
		var rpc *ExporterClient
		if err == nil {
			var ok bool
			if rpc, ok = raw.(*ExporterClient); !ok {
				p.kill()
				err = fmt.Errorf("exporter %q: unexpected client %T", name, raw)
			}
		}
		x.mu.Lock()
		if err != nil {
			sl.running, sl.lastErr = nil, err
			x.host.warn("exporter unavailable: its endpoints answer 503 until it can start", "exporter", name, "error", err.Error())
		} else {
			sl.running, sl.lastErr = &runningExporter{client: p, rpc: rpc}, nil
		}
		sl.starting = nil
		close(done)
		x.mu.Unlock()
	}()
	return done
}

// get returns the named exporter's client, starting it if needed and
// waiting at most ExporterWait for a start under way.
func (x *Exporters) get(ctx context.Context, name string) (*ExporterClient, error) {
	x.mu.Lock()
	sl := x.slots[name]
	if sl != nil && sl.running != nil {
		if !sl.running.client.exited() {
			rpc := sl.running.rpc
			x.mu.Unlock()
			return rpc, nil
		}
		x.host.warn("exporter process had exited; restarting it", "exporter", name)
		sl.running.client.kill()
		sl.running = nil
	}
	done := x.startLocked(name)
	sl = x.slots[name]
	x.mu.Unlock()

	timer := time.NewTimer(ExporterWait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		return nil, fmt.Errorf("%w: exporter %q is still starting after %s", ErrExporterTimeout, name, ExporterWait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if sl.running == nil {
		return nil, fmt.Errorf("%w: %v", ErrExporterUnavailable, sl.lastErr)
	}
	return sl.running.rpc, nil
}

// Export runs the named exporter on req.
func (x *Exporters) Export(ctx context.Context, name string, req ExportRequest) (Document, error) {
	c, err := x.get(ctx, name)
	if err != nil {
		return Document{}, err
	}
	doc, err := c.Export(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return Document{}, ctx.Err()
		}
		// The process may have died; go-plugin notices exits asynchronously,
		// so drop it now: the next request starts a fresh one.
		x.drop(name, c)
		return Document{}, fmt.Errorf("%w: exporter %q: %v", ErrExporterFailed, name, status.Convert(err).Message())
	}
	return doc, nil
}

// drop stops and forgets the named exporter if c is still its client.
func (x *Exporters) drop(name string, c *ExporterClient) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if sl := x.slots[name]; sl != nil && sl.running != nil && sl.running.rpc == c {
		sl.running.client.kill()
		sl.running = nil
		x.host.logf("exporter failed a request; it will be restarted on the next one", "exporter", name)
	}
}

// Close stops every exporter process, waiting for starts under way.
func (x *Exporters) Close() {
	x.mu.Lock()
	var pending []chan struct{}
	for _, sl := range x.slots {
		if sl.starting != nil {
			pending = append(pending, sl.starting)
		}
	}
	x.mu.Unlock()
	for _, ch := range pending {
		<-ch
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for n, sl := range x.slots {
		if sl.running != nil {
			sl.running.client.kill()
		}
		delete(x.slots, n)
	}
}

var _ core.Exporters = (*Exporters)(nil)
