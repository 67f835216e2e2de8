package plugins

import (
	"bytes"
	"testing"

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
