package plugins

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/threatd/threatd/core/ioc"
	pb "github.com/threatd/threatd/plugins/proto/v2"
)

// The helpers the generated converters (convert_gen.go) are written with.

// ts sends a time (zero: none).
func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func tsPtr(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

// fromTS reads a time, in UTC (none: zero).
func fromTS(p *timestamppb.Timestamp) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.AsTime().UTC()
}

func fromTSPtr(p *timestamppb.Timestamp) *time.Time {
	if p == nil {
		return nil
	}
	t := p.AsTime().UTC()
	return &t
}

// each converts every element of a list (nil stays nil).
func each[A, B any](in []A, f func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// mapOf converts every value of a map (nil stays nil).
func mapOf[K comparable, A, B any](in map[K]A, f func(A) B) map[K]B {
	if in == nil {
		return nil
	}
	out := make(map[K]B, len(in))
	for k, v := range in {
		out[k] = f(v)
	}
	return out
}

// optTo and optFrom carry an optional scalar (nil: absent).
func optTo[A, B any](p *A, f func(A) B) *B {
	if p == nil {
		return nil
	}
	v := f(*p)
	return &v
}

func optFrom[A, B any](p *A, f func(A) B) *B { return optTo(p, f) }

// ptrTo and ptrFrom carry an optional struct (nil: absent).
func ptrTo[T, M any](p *T, f func(T) *M) *M {
	if p == nil {
		return nil
	}
	return f(*p)
}

func ptrFrom[M, T any](m *M, f func(*M) T) *T {
	if m == nil {
		return nil
	}
	v := f(m)
	return &v
}

// keepNilSlice and keepNilMap are a list or a map read from the wire: nil
// when it was sent as none (isNil), else never nil, however empty.
func keepNilSlice[E any](isNil bool, v []E) []E {
	if isNil {
		return nil
	}
	if v == nil {
		return []E{}
	}
	return v
}

func keepNilMap[K comparable, V any](isNil bool, v map[K]V) map[K]V {
	if isNil {
		return nil
	}
	if v == nil {
		return map[K]V{}
	}
	return v
}

// iocsToPB and iocsFromPB carry a report's indicators (the exporter
// protocol sends them beside the report).
func iocsToPB(iocs []ioc.IOC) []*pb.IOC   { return each(iocs, iocToPB) }
func iocsFromPB(iocs []*pb.IOC) []ioc.IOC { return each(iocs, iocFromPB) }
