package plugins

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v2"
)

// protocolMessages lists every message of the plugin protocol.
func protocolMessages(t testing.TB) []protoreflect.MessageType {
	t.Helper()
	var out []protoreflect.MessageType
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if strings.HasPrefix(string(mt.Descriptor().FullName()), "threatd.plugin.v2.") {
			out = append(out, mt)
		}
		return true
	})
	if len(out) < 100 {
		t.Fatalf("only %d messages of threatd.plugin.v2 are registered", len(out))
	}
	return out
}

func TestCodecReplacesGRPCs(t *testing.T) {
	t.Parallel()
	if _, ok := encoding.GetCodecV2("proto").(codec); !ok {
		t.Fatalf("gRPC's proto codec is %T, not the plugins' codec", encoding.GetCodecV2("proto"))
	}
	for _, mt := range protocolMessages(t) {
		if _, ok := mt.New().Interface().(vtMessage); !ok {
			t.Errorf("%s has no generated encoding code: run make proto", mt.Descriptor().FullName())
		}
	}
}

// fillMessage sets every field of m, at every depth up to 3, each to a
// value of its own.
func fillMessage(m protoreflect.Message, n *int, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Message() != nil && depth >= 3 {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range 2 {
				*n++
				k := scalar(fd.MapKey(), *n).MapKey()
				if fd.MapValue().Message() != nil {
					v := mp.NewValue()
					fillMessage(v.Message(), n, depth+1)
					mp.Set(k, v)
				} else {
					mp.Set(k, scalar(fd.MapValue(), *n))
				}
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range 2 {
				*n++
				if fd.Message() != nil {
					v := l.NewElement()
					fillMessage(v.Message(), n, depth+1)
					l.Append(v)
				} else {
					l.Append(scalar(fd, *n))
				}
			}
		case fd.Message() != nil:
			fillMessage(m.Mutable(fd).Message(), n, depth+1)
		default:
			*n++
			m.Set(fd, scalar(fd, *n))
		}
	}
}

// scalar is a value of fd's kind made from n (never the zero value).
func scalar(fd protoreflect.FieldDescriptor, n int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(n%3 + 1))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(-n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(-int64(n) << 33)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n) << 33)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(n) + 0.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(n) + 0.25)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("s%d é ☃", n))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{byte(n), 0, 0xff})
	}
	panic(fmt.Sprintf("no value for %v", fd.Kind()))
}

// TestCodecSpeaksProtobuf sends every message of the protocol, with every
// field set, through the codec one way and protobuf's reflection the
// other: each side reads what the other wrote.
func TestCodecSpeaksProtobuf(t *testing.T) {
	t.Parallel()
	c := encoding.GetCodecV2("proto")
	for _, mt := range protocolMessages(t) {
		n := 0
		m := mt.New()
		fillMessage(m, &n, 0)
		want := m.Interface()

		data, err := c.Marshal(want)
		if err != nil {
			t.Fatalf("%s: %v", mt.Descriptor().FullName(), err)
		}
		if size := proto.Size(want); data.Len() != size {
			t.Errorf("%s: the codec wrote %d bytes, protobuf %d", mt.Descriptor().FullName(), data.Len(), size)
		}
		got := mt.New().Interface()
		if err := proto.Unmarshal(data.Materialize(), got); err != nil || !proto.Equal(got, want) {
			t.Errorf("%s: protobuf read the codec's bytes as %v (%v), want %v", mt.Descriptor().FullName(), got, err, want)
		}
		data.Free()

		raw, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got = mt.New().Interface()
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, got); err != nil || !proto.Equal(got, want) {
			t.Errorf("%s: the codec read protobuf's bytes as %v (%v), want %v", mt.Descriptor().FullName(), got, err, want)
		}
	}
}

// TestCodecLargeMessagePooled: a message above gRPC's pooling threshold is
// written into a pooled buffer, and its bytes are whole.
func TestCodecLargeMessagePooled(t *testing.T) {
	t.Parallel()
	c := encoding.GetCodecV2("proto")
	th := threatToPB(core.Threat{ID: "t", Details: core.Details{ThreatDescription: strings.Repeat("long description ", 10000)}})
	data, err := c.Marshal(th)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Free()
	var got pb.Threat
	if err := c.Unmarshal(data, &got); err != nil || !proto.Equal(&got, th) {
		t.Fatalf("a %d-byte message came back as %d bytes of description (%v)", data.Len(), len(got.GetDetails().GetThreatDescription()), err)
	}
}

// TestCodecFallsBack: a message without generated code (go-plugin's
// services use such) goes through gRPC's own codec.
func TestCodecFallsBack(t *testing.T) {
	t.Parallel()
	c := encoding.GetCodecV2("proto")
	data, err := c.Marshal(&emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Unmarshal(data, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Marshal("not a message"); err == nil {
		t.Fatal("a string was marshalled as a message")
	}
}

// FuzzCodecUnmarshal reads arbitrary bytes as a report with the generated
// code and with protobuf's reflection: the generated code never panics,
// and what both read they read the same. They disagree on whether to read
// in two ways only: protobuf keeps a field sent with the wrong wire type as
// an unknown field where the generated code refuses it, and protobuf
// refuses a string that is not UTF-8. Neither comes from the other end of
// the boundary; any other refusal of what protobuf reads fails.
func FuzzCodecUnmarshal(f *testing.F) {
	n := 0
	m := (&pb.Threat{}).ProtoReflect()
	fillMessage(m, &n, 0)
	seed, _ := proto.Marshal(m.Interface())
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var viaVT, viaProto pb.Threat
		vtErr := viaVT.UnmarshalVT(b)
		protoErr := proto.Unmarshal(b, &viaProto)
		if protoErr == nil && vtErr != nil && !strings.Contains(vtErr.Error(), "wrong wireType") {
			t.Fatalf("protobuf read %x, the generated code refused it: %v", b, vtErr)
		}
		// Unknown fields are kept as read, except that protobuf writes
		// their tags again in the shortest form.
		discardUnknown(viaVT.ProtoReflect())
		discardUnknown(viaProto.ProtoReflect())
		if protoErr == nil && vtErr == nil && !proto.Equal(&viaVT, &viaProto) {
			t.Fatalf("%x read differently:\n generated %v\nprotobuf %v", b, &viaVT, &viaProto)
		}
	})
}

// discardUnknown drops the unknown fields of m, at every depth.
func discardUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := range v.List().Len() {
				discardUnknown(v.List().Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, e protoreflect.Value) bool {
				discardUnknown(e.Message())
				return true
			})
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			discardUnknown(v.Message())
		}
		return true
	})
}

// BenchmarkCodec encodes and decodes a report through the codec and
// through gRPC's own, which works by reflection.
func BenchmarkCodec(b *testing.B) {
	th := fill[core.Threat](b)
	th.Details.ThreatDescription = strings.Repeat("A package that runs a script at install time. ", 20)
	m := threatToPB(th)
	for _, c := range []struct {
		name  string
		codec encoding.CodecV2
	}{{"generated", encoding.GetCodecV2("proto")}, {"reflection", encoding.GetCodecV2("proto").(codec).fallback}} {
		b.Run(c.name+"/marshal", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := c.codec.Marshal(m)
				if err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
		data, _ := c.codec.Marshal(m)
		raw := data.Materialize()
		b.Run(c.name+"/unmarshal", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var got pb.Threat
				if err := c.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
