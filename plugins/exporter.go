package plugins

import (
	"context"
	"errors"
	"io"
	"iter"
	"log/slog"
	"os"
	"slices"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v2"
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

// recordFromPB and recordToPB carry a record's indicators once, in the
// record's iocs: the report's own (Threat.iocs) are left empty on the wire
// and set again from them.
func recordFromPB(r *pb.ExportRecord) ExportRecord {
	rec := ExportRecord{Threat: threatFromPB(r.Threat), IOCs: iocsFromPB(r.Iocs), Community: communityFromPB(r.Community)}
	rec.Threat.IOCs = rec.IOCs
	return rec
}

func communityToPB(c core.Community) *pb.Community {
	m := &pb.Community{Sightings: sightingCountsToPB(c.Sightings), Confidence: int32(c.Confidence), Disputed: c.Disputed, ChangedAt: ts(c.ChangedAt)}
	for _, ref := range c.Campaigns {
		m.Campaigns = append(m.Campaigns, campaignRefToPB(ref))
	}
	return m
}

func communityFromPB(m *pb.Community) core.Community {
	if m == nil {
		return core.Community{}
	}
	c := core.Community{Sightings: sightingCountsFromPB(m.Sightings), Confidence: int(m.Confidence), Disputed: m.Disputed, ChangedAt: fromTS(m.ChangedAt)}
	for _, ref := range m.Campaigns {
		c.Campaigns = append(c.Campaigns, campaignRefFromPB(ref))
	}
	return c
}

func recordToPB(r ExportRecord) *pb.ExportRecord {
	t := r.Threat
	t.IOCs = nil
	return &pb.ExportRecord{Threat: threatToPB(t), Iocs: iocsToPB(r.IOCs), Community: communityToPB(r.Community)}
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
		// The chunk's bytes are this message's own (the codec copies
		// them out of gRPC's buffer): a writer may keep them.
		if a, ok := w.(core.Adopter); ok && a.Adopt(chunk.Data) {
			continue
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
