package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"slices"
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

// StreamExporter writes its document while it reads the records: memory
// stays bounded whatever the selection (every verified report). req has no
// Records; they come from records, in order. The document goes to w (set
// w.ContentType before the first Write).
type StreamExporter interface {
	ExportStream(ctx context.Context, req ExportRequest, records iter.Seq[ExportRecord], w *DocumentWriter) error
}

// StreamExporterFunc adapts a function to StreamExporter.
type StreamExporterFunc func(ctx context.Context, req ExportRequest, records iter.Seq[ExportRecord], w *DocumentWriter) error

// ExportStream calls f.
func (f StreamExporterFunc) ExportStream(ctx context.Context, req ExportRequest, records iter.Seq[ExportRecord], w *DocumentWriter) error {
	return f(ctx, req, records, w)
}

// DocumentWriter sends an exporter's document to the daemon in chunks of at
// most 1 MiB as it is written.
type DocumentWriter struct {
	// ContentType is the document's media type; set it before the first
	// Write.
	ContentType string
	send        func(*pb.DocumentChunk) error
	buf         []byte
	started     bool
}

// Write buffers p and sends every full chunk.
func (w *DocumentWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), chunkSize-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == chunkSize {
			if err := w.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

func (w *DocumentWriter) flush() error {
	msg := &pb.DocumentChunk{Data: w.buf}
	if !w.started {
		msg.ContentType, w.started = w.ContentType, true
	}
	err := w.send(msg)
	w.buf = w.buf[:0:0]
	return err
}

// Close sends what is buffered (at least one chunk, for the content type).
func (w *DocumentWriter) Close() error {
	if len(w.buf) > 0 || !w.started {
		return w.flush()
	}
	return nil
}

// RenderStream runs a streaming exporter in this process over records and
// returns its whole document, as the daemon would receive it: for exporter
// authors' tests (sdk.Render).
func RenderStream(ctx context.Context, e StreamExporter, req ExportRequest, records []ExportRecord) (Document, error) {
	var doc Document
	w := &DocumentWriter{send: func(c *pb.DocumentChunk) error {
		if c.ContentType != "" {
			doc.ContentType = c.ContentType
		}
		doc.Body = append(doc.Body, c.Data...)
		return nil
	}}
	if err := e.ExportStream(ctx, req, slices.Values(records), w); err != nil {
		return Document{}, err
	}
	if err := w.Close(); err != nil {
		return Document{}, err
	}
	return doc, nil
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
	impl              Exporter       // the document whole
	stream            StreamExporter // or written while the records arrive
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
	// The parameters come first, then the records.
	first, err := stream.Recv()
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	var req ExportRequest
	if p := first.GetParams(); p != nil {
		req.Endpoint, req.Query, req.Service = p.Endpoint, p.Query, p.Service
	}
	var recvErr error
	pending := first.GetRecord()
	records := func(yield func(ExportRecord) bool) {
		if pending != nil {
			rec := recordFromPB(pending)
			pending = nil
			if !yield(rec) {
				return
			}
		}
		for {
			in, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				recvErr = err
				return
			}
			if r := in.GetRecord(); r != nil && !yield(recordFromPB(r)) {
				return
			}
		}
	}
	if errors.Is(err, io.EOF) {
		records = func(func(ExportRecord) bool) {}
	}
	if s.p.stream != nil {
		w := &DocumentWriter{send: stream.Send}
		if err := s.p.stream.ExportStream(stream.Context(), req, records, w); err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		if recvErr != nil {
			return recvErr
		}
		return w.Close()
	}
	for r := range records {
		req.Records = append(req.Records, r)
	}
	if recvErr != nil {
		return recvErr
	}
	doc, err := s.p.impl.Export(stream.Context(), req)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	w := &DocumentWriter{ContentType: doc.ContentType, send: stream.Send}
	if _, err := w.Write(doc.Body); err != nil {
		return err
	}
	return w.Close()
}

func recordFromPB(r *pb.ExportRecord) ExportRecord {
	rec := ExportRecord{Threat: threatFromPB(r.Threat)}
	for _, i := range r.Iocs {
		rec.IOCs = append(rec.IOCs, core.IOC{Type: i.Type, Value: i.Value, Detail: i.Detail, Versions: i.Versions,
			Origin: i.Origin, Confidence: int(i.Confidence)})
	}
	return rec
}

func recordToPB(r ExportRecord) *pb.ExportRecord {
	rec := &pb.ExportRecord{Threat: threatToPB(r.Threat)}
	for _, i := range r.IOCs {
		rec.Iocs = append(rec.Iocs, &pb.IOC{Type: i.Type, Value: i.Value, Detail: i.Detail, Versions: i.Versions,
			Origin: i.Origin, Confidence: int32(i.Confidence)})
	}
	return rec
}

// ExporterClient is the daemon's side of an exporter plugin.
type ExporterClient struct {
	rpc pb.ExporterClient
}

// Export streams the request's records to the exporter while the document
// streams back to w: neither side holds the whole selection or document.
// Records are sent from a goroutine, so that an exporter that writes while
// it reads never waits on a daemon that is still sending.
func (c *ExporterClient) Export(ctx context.Context, req ExportRequest, w core.ExportWriter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Export(ctx)
	if err != nil {
		return err
	}
	sent := make(chan error, 1)
	go func() {
		err := stream.Send(&pb.ExportInput{Item: &pb.ExportInput_Params{Params: &pb.ExportParams{Endpoint: req.Endpoint, Query: req.Query, Service: req.Service}}})
		if err == nil {
			err = req.ForEach(func(r ExportRecord) error {
				return stream.Send(&pb.ExportInput{Item: &pb.ExportInput_Record{Record: recordToPB(r)}})
			})
		}
		if err != nil && !errors.Is(err, io.EOF) {
			// A selection that fails (storage) ends the export.
			sent <- err
			cancel()
			return
		}
		// io.EOF: the exporter ended the call; its status comes from Recv.
		sent <- stream.CloseSend()
	}()
	started := false
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			select {
			case serr := <-sent:
				if serr != nil && !errors.Is(serr, io.EOF) {
					return &selectionError{serr}
				}
			default:
			}
			return err
		}
		if !started {
			started = true
			if err := w.Start(chunk.ContentType); err != nil {
				return err
			}
		}
		if _, err := w.Write(chunk.Data); err != nil {
			return err
		}
	}
	if err := <-sent; err != nil && !errors.Is(err, io.EOF) {
		return &selectionError{err}
	}
	if !started {
		return w.Start("")
	}
	return nil
}

// selectionError is a failure to read the records (not the exporter's).
type selectionError struct{ err error }

func (e *selectionError) Error() string { return e.err.Error() }
func (e *selectionError) Unwrap() error { return e.err }

// ServeExporter serves an exporter as a plugin process; call it from main.
func ServeExporter(name, description string, e Exporter) {
	serveExporter(&exporterPlugin{name: name, description: description, impl: e})
}

// ServeStreamExporter serves a streaming exporter as a plugin process.
func ServeStreamExporter(name, description string, e StreamExporter) {
	serveExporter(&exporterPlugin{name: name, description: description, stream: e})
}

func serveExporter(p *exporterPlugin) {
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	ignoreStopSignals()
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{ProtocolVersion: {KindExporter: p}},
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
		x.host.restarted(KindExporter, name)
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
		return nil, &core.ExporterError{Exporter: name, Kind: ErrExporterTimeout, Cause: fmt.Errorf("still starting after %s", ExporterWait)}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if sl.running == nil {
		return nil, &core.ExporterError{Exporter: name, Kind: ErrExporterUnavailable, Cause: sl.lastErr}
	}
	return sl.running.rpc, nil
}

// Export runs the named exporter on req, writing the document to w.
func (x *Exporters) Export(ctx context.Context, name string, req ExportRequest, w core.ExportWriter) error {
	c, err := x.get(ctx, name)
	if err != nil {
		return err
	}
	err = c.Export(ctx, req, w)
	var sel *selectionError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &sel):
		return sel.err // the records could not be read: not the exporter's fault
	case ctx.Err() != nil:
		return ctx.Err()
	}
	// The process may have died; go-plugin notices exits asynchronously,
	// so drop it now: the next request starts a fresh one.
	x.drop(name, c)
	return &core.ExporterError{Exporter: name, Kind: ErrExporterFailed, Cause: errors.New(status.Convert(err).Message())}
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
