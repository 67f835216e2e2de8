package plugins

import (
	"bytes"
	"context"
	"iter"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v2"
)

// A streaming exporter's document leaves in chunks of at most 1 MiB, the
// first carrying the content type; an empty document is still one chunk.
func TestDocumentWriterChunks(t *testing.T) {
	var chunks []*pb.DocumentChunk
	w := &DocumentWriter{ContentType: "text/csv", send: func(c *pb.DocumentChunk) error {
		chunks = append(chunks, &pb.DocumentChunk{ContentType: c.ContentType, Data: bytes.Clone(c.Data)})
		return nil
	}}
	body := bytes.Repeat([]byte("0123456789abcdef"), (5*chunkSize/2)/16)
	for p := body; len(p) > 0; p = p[min(len(p), 7777):] {
		if _, err := w.Write(p[:min(len(p), 7777)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for i, c := range chunks {
		if len(c.Data) > chunkSize || (i == 0) != (c.ContentType == "text/csv") {
			t.Fatalf("chunk %d: %d bytes, content type %q", i, len(c.Data), c.ContentType)
		}
		got = append(got, c.Data...)
	}
	if len(chunks) != 3 || !bytes.Equal(got, body) {
		t.Fatalf("%d chunks, %d of %d bytes", len(chunks), len(got), len(body))
	}
	chunks = nil
	empty := &DocumentWriter{ContentType: "text/plain", send: func(c *pb.DocumentChunk) error { chunks = append(chunks, c); return nil }}
	if err := empty.Close(); err != nil || len(chunks) != 1 || chunks[0].ContentType != "text/plain" {
		t.Fatalf("empty document: %v %v", chunks, err)
	}
}

// recorder is an ExportWriter that copies what it is given (no Adopt).
type recorder struct{ got []byte }

func (*recorder) Start(string) error            { return nil }
func (r *recorder) Write(p []byte) (int, error) { r.got = append(r.got, p...); return len(p), nil }

// A document read into a core.BufferWriter is the exporter's, byte for
// byte, whether it comes in one message (which the buffer adopts, not
// copied) or in several (the first adopted, the rest appended), as into
// a writer that copies every chunk.
func TestExportIntoBuffer(t *testing.T) {
	t.Parallel()
	var body []byte
	exp := StreamExporterFunc(func(_ context.Context, _ ExportRequest, _ iter.Seq[ExportRecord], w *DocumentWriter) error {
		_, err := w.Write(body)
		return err
	})
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{KindExporter: &exporterPlugin{name: "t", stream: exp}})
	defer func() { _ = client.Close(); server.Stop() }()
	raw, err := client.Dispense(KindExporter)
	if err != nil {
		t.Fatal(err)
	}
	c := raw.(*ExporterClient)
	for _, n := range []int{0, 1000, chunkSize, 5*chunkSize/2 + 3} {
		body = make([]byte, n)
		for i := range body {
			body[i] = byte('a' + i%26 + i/chunkSize)
		}
		var buf core.BufferWriter
		var rec recorder
		for _, w := range []core.ExportWriter{&buf, &rec} {
			if err := c.Export(context.Background(), ExportRequest{}, w); err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
		}
		if !bytes.Equal(buf.Bytes(), body) || !bytes.Equal(rec.got, body) {
			t.Fatalf("%d bytes: the buffer holds %d, the recorder %d", n, buf.Len(), len(rec.got))
		}
	}

	// Adopt takes bytes only into an empty buffer, and keeps them.
	var buf core.BufferWriter
	b := []byte("first")
	if !buf.Adopt(b) || &buf.Bytes()[0] != &b[0] || buf.Adopt([]byte("second")) {
		t.Fatal("Adopt: an empty buffer adopts its first bytes, and only those")
	}
	if _, err := buf.Write([]byte(" then")); err != nil || buf.String() != "first then" {
		t.Fatalf("written after adopting: %q %v", buf.String(), err)
	}
}
