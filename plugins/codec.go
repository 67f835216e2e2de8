package plugins

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the codec this one falls back to
	"google.golang.org/grpc/mem"
)

// The plugin protocol's messages cross the process boundary in the
// protobuf wire format, encoded and decoded by code generated for each
// message (protoc-gen-go-vtproto, `make proto`) instead of through
// protobuf's reflection. Filling the index spill at a million reports
// streams every report from the storage plugin to the daemon: decoding
// was 15 % of the daemon's CPU, encoding 6 % of the plugin's
// (docs/performance.md). The bytes on the wire are the same protobuf;
// a message without generated code (go-plugin's own services) goes
// through gRPC's codec as before. Unlike protobuf's reflection, the
// generated code does not refuse a string that is not UTF-8: every string
// is checked or cleaned where it enters threatd (the API's JSON, the
// sources), and both ends of the boundary are threatd's.

// vtMessage is a message with generated encoding code.
type vtMessage interface {
	SizeVT() int
	MarshalToSizedBufferVT(dAtA []byte) (int, error)
	UnmarshalVT(dAtA []byte) error
}

// codec is gRPC's "proto" codec for messages with generated code; fallback
// is gRPC's own for the others.
type codec struct{ fallback encoding.CodecV2 }

func init() {
	encoding.RegisterCodecV2(codec{fallback: encoding.GetCodecV2("proto")})
}

// Name replaces gRPC's "proto" codec: both ends speak the same format.
func (codec) Name() string { return "proto" }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(vtMessage)
	if !ok {
		return c.fallback.Marshal(v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if err := marshalTo(m, buf); err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if err := marshalTo(m, (*buf)[:size]); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// marshalTo writes m into buf, which is exactly its size (the generated
// code writes from the end).
func marshalTo(m vtMessage, buf []byte) error {
	n, err := m.MarshalToSizedBufferVT(buf)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return fmt.Errorf("proto: %T wrote %d bytes of the %d it measured", m, n, len(buf))
	}
	return nil
}

// Unmarshal decodes data into v. The generated code copies every string
// and bytes field out of the buffer, so it goes back to the pool at once.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(vtMessage)
	if !ok {
		return c.fallback.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return m.UnmarshalVT(buf.ReadOnlyData())
}
