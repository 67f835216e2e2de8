package main

import (
	"bytes"
	"fmt"
	"go/types"
	"sort"
	"strings"
)

func (g *gen) client() []byte {
	var b bytes.Buffer
	b.WriteString(header + "package plugins\n\n")
	b.WriteString(g.imports(`"context"`, `"time"`, "", `"github.com/threatd/threatd/core"`, `pb "github.com/threatd/threatd/plugins/proto/v2"`))
	b.WriteString("var _ = time.Time{}\n\n")
	for _, m := range g.methods {
		params := "ctx context.Context"
		if m.Param != nil {
			params += ", p " + g.goType(m.Param)
		}
		res := "error"
		if m.Result != nil {
			res = "(" + g.goType(m.Result) + ", error)"
		}
		fmt.Fprintf(&b, "// %s is port.Store's, over the plugin protocol.\nfunc (c *StorageClient) %s(%s) %s {\n", m.Name, m.Name, params, res)
		zero := ""
		if m.Result != nil {
			zero = "out, "
			fmt.Fprintf(&b, "\tvar out %s\n", g.goType(m.Result))
		}
		switch m.Kind {
		case unary:
			fmt.Fprintf(&b, "\tr, err := c.conn().%s(ctx, %s)\n\tif err != nil {\n\t\treturn %sfromStatus(err)\n\t}\n", m.Name, g.request(m, "p"), zero)
			switch {
			case m.Result == nil:
				b.WriteString("\t_ = r\n\treturn nil\n")
			case namedStruct(m.Result) != nil:
				fmt.Fprintf(&b, "\treturn %s, nil\n", g.conv(m.Result, "r", false))
			default:
				fmt.Fprintf(&b, "\treturn %s, nil\n", g.conv(m.Result, "r.Value", false))
			}
		case serverStream:
			room := ""
			if r := roomFor(m); r != "" {
				room = fmt.Sprintf("\t\tif out == nil {\n\t\t\tout = make(%s, 0, %s)\n\t\t}\n", g.goType(m.Result), r)
			}
			fmt.Fprintf(&b, "\tstream, err := c.conn().%s(ctx, %s)\n\terr = eachRecv(stream, err, func(r *pb.%s) error {\n%s\t\tout = append(out, %s)\n\t\treturn nil\n\t})\n",
				m.Name, g.request(m, "p"), m.Reply, room, g.conv(m.Elem, "r", false))
			b.WriteString("\tif err != nil {\n\t\treturn nil, err\n\t}\n\treturn out, nil\n")
		case partStream:
			st := namedStruct(m.Result).Underlying().(*types.Struct)
			fmt.Fprintf(&b, "\tstream, err := c.conn().%s(ctx, %s)\n\tfirst := true\n\terr = eachRecv(stream, err, func(r *pb.%s) error {\n\t\tif first {\n\t\t\tfirst = false\n", m.Name, g.request(m, "p"), m.Reply)
			for i := range st.NumFields() {
				if f := st.Field(i); f != m.Part {
					fmt.Fprintf(&b, "\t\t\tout.%s = %s\n", f.Name(), g.conv(f.Type(), "r."+f.Name(), false))
				}
			}
			fmt.Fprintf(&b, "\t\t\treturn nil\n\t\t}\n\t\tout.%s = append(out.%s, %s)\n\t\treturn nil\n\t})\n", m.Part.Name(), m.Part.Name(), g.conv(sliceOfStruct(m.Part.Type()), "r.Item", false))
			fmt.Fprintf(&b, "\tif err != nil {\n\t\treturn %s{}, err\n\t}\n\treturn out, nil\n", g.goType(m.Result))
		case callbackStream:
			var args []string
			for _, v := range tupleVars(m.Callback.Params()) {
				args = append(args, g.conv(v.Type(), "r."+exported(v.Name()), false))
			}
			fmt.Fprintf(&b, "\tstream, err := c.conn().%s(ctx, &pb.%s{})\n\treturn eachRecv(stream, err, func(r *pb.%sItem) error { return p(%s) })\n", m.Name, m.Req, m.Name, strings.Join(args, ", "))
		case clientStream:
			vars := tupleVars(m.Callback.Results())
			vars = vars[:len(vars)-2]
			var names, fields []string
			for _, v := range vars {
				names = append(names, lowerFirst(exported(v.Name())))
				fields = append(fields, exported(v.Name())+": "+g.conv(v.Type(), lowerFirst(exported(v.Name())), true))
			}
			fmt.Fprintf(&b, `	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.conn().%s(ctx)
	if err != nil {
		return out, fromStatus(err)
	}
	for {
		%s, ok, err := p()
		if err != nil {
			cancel() // the plugin sees the stream fail and rolls back
			return out, err
		}
		if !ok {
			break
		}
		if err := stream.Send(&pb.%sItem{%s}); err != nil {
			_, rerr := stream.CloseAndRecv()
			return out, fromStatus(rerr)
		}
	}
	r, err := stream.CloseAndRecv()
	if err != nil {
		return out, fromStatus(err)
	}
	return %s, nil
`, m.Name, strings.Join(names, ", "), m.Name, strings.Join(fields, ", "), g.conv(m.Result, "r.Value", false))
		}
		b.WriteString("}\n\n")
	}
	return b.Bytes()
}

func (g *gen) server() []byte {
	var b bytes.Buffer
	b.WriteString(header + "package plugins\n\n")
	b.WriteString(g.imports(`"context"`, `"errors"`, `"io"`, "", `"google.golang.org/grpc"`, "", `"github.com/threatd/threatd/core"`, `"github.com/threatd/threatd/core/port"`, `pb "github.com/threatd/threatd/plugins/proto/v2"`))
	b.WriteString("var (\n\t_ = errors.New\n\t_ = io.EOF\n\t_ port.Store\n\t_ core.Threat\n)\n\n")
	for _, m := range g.methods {
		arg := ""
		switch {
		case m.Param == nil || m.Callback != nil:
		case namedStruct(m.Param) != nil:
			arg = ", " + g.conv(m.Param, "req", false)
		default:
			arg = ", " + g.conv(m.Param, "req."+exported(m.ParamName), false)
		}
		switch m.Kind {
		case unary:
			reply := "&pb." + m.Reply + "{}"
			call := fmt.Sprintf("st.%s(ctx%s)", m.Name, arg)
			fmt.Fprintf(&b, "func (s *storageServer) %s(ctx context.Context, req *pb.%s) (*pb.%s, error) {\n\treturn withStore(s, func(st port.Store) (*pb.%s, error) {\n", m.Name, m.Req, m.Reply, m.Reply)
			switch {
			case m.Result == nil:
				fmt.Fprintf(&b, "\t\treturn %s, %s\n", reply, call)
			case namedStruct(m.Result) != nil:
				fmt.Fprintf(&b, "\t\tr, err := %s\n\t\treturn %s, err\n", call, g.conv(m.Result, "r", true))
			default:
				fmt.Fprintf(&b, "\t\tr, err := %s\n\t\treturn &pb.%s{Value: %s}, err\n", call, m.Reply, g.conv(m.Result, "r", true))
			}
			b.WriteString("\t})\n}\n\n")
		case serverStream, partStream:
			fmt.Fprintf(&b, "func (s *storageServer) %s(req *pb.%s, stream grpc.ServerStreamingServer[pb.%s]) error {\n\tctx := stream.Context()\n", m.Name, m.Req, m.Reply)
			fmt.Fprintf(&b, "\t_, err := withStore(s, func(st port.Store) (struct{}, error) {\n\t\tr, err := st.%s(ctx%s)\n\t\tif err != nil {\n\t\t\treturn struct{}{}, err\n\t\t}\n", m.Name, arg)
			if m.Kind == serverStream {
				fmt.Fprintf(&b, "\t\tfor _, it := range r {\n\t\t\tif err := stream.Send(%s); err != nil {\n\t\t\t\treturn struct{}{}, err\n\t\t\t}\n\t\t}\n", g.conv(m.Elem, "it", true))
			} else {
				st := namedStruct(m.Result).Underlying().(*types.Struct)
				var fields []string
				for i := range st.NumFields() {
					if f := st.Field(i); f != m.Part {
						fields = append(fields, f.Name()+": "+g.conv(f.Type(), "r."+f.Name(), true))
					}
				}
				fmt.Fprintf(&b, "\t\tif err := stream.Send(&pb.%s{%s}); err != nil {\n\t\t\treturn struct{}{}, err\n\t\t}\n", m.Reply, strings.Join(fields, ", "))
				fmt.Fprintf(&b, "\t\tfor _, it := range r.%s {\n\t\t\tif err := stream.Send(&pb.%s{Item: %s}); err != nil {\n\t\t\t\treturn struct{}{}, err\n\t\t\t}\n\t\t}\n", m.Part.Name(), m.Reply, g.conv(sliceOfStruct(m.Part.Type()), "it", true))
			}
			b.WriteString("\t\treturn struct{}{}, nil\n\t})\n\treturn err\n}\n\n")
		case callbackStream:
			vars := tupleVars(m.Callback.Params())
			var params, fields []string
			for i, v := range vars {
				params = append(params, fmt.Sprintf("a%d %s", i, g.goType(v.Type())))
				fields = append(fields, exported(v.Name())+": "+g.conv(v.Type(), fmt.Sprintf("a%d", i), true))
			}
			fmt.Fprintf(&b, "func (s *storageServer) %s(req *pb.%s, stream grpc.ServerStreamingServer[pb.%sItem]) error {\n\tctx := stream.Context()\n", m.Name, m.Req, m.Name)
			fmt.Fprintf(&b, "\t_, err := withStore(s, func(st port.Store) (struct{}, error) {\n\t\treturn struct{}{}, st.%s(ctx, func(%s) error {\n\t\t\treturn stream.Send(&pb.%sItem{%s})\n\t\t})\n\t})\n\treturn err\n}\n\n",
				m.Name, strings.Join(params, ", "), m.Name, strings.Join(fields, ", "))
		case clientStream:
			vars := tupleVars(m.Callback.Results())
			vars = vars[:len(vars)-2]
			var zeros, vals []string
			for _, v := range vars {
				zeros = append(zeros, "zero"+exported(v.Name()))
				vals = append(vals, g.conv(v.Type(), "it."+exported(v.Name()), false))
			}
			fmt.Fprintf(&b, "func (s *storageServer) %s(stream grpc.ClientStreamingServer[pb.%sItem, pb.%s]) error {\n\tctx := stream.Context()\n", m.Name, m.Name, m.Reply)
			for i, v := range vars {
				fmt.Fprintf(&b, "\tvar %s %s\n", zeros[i], g.goType(v.Type()))
			}
			fmt.Fprintf(&b, "\treply, err := withStore(s, func(st port.Store) (*pb.%s, error) {\n\t\tr, err := st.%s(ctx, func() (%s, bool, error) {\n\t\t\tit, err := stream.Recv()\n\t\t\tif errors.Is(err, io.EOF) {\n\t\t\t\treturn %s, false, nil\n\t\t\t}\n\t\t\tif err != nil {\n\t\t\t\treturn %s, false, err\n\t\t\t}\n\t\t\treturn %s, true, nil\n\t\t})\n\t\treturn &pb.%s{Value: %s}, err\n\t})\n\tif err != nil {\n\t\treturn err\n\t}\n\treturn stream.SendAndClose(reply)\n}\n\n",
				m.Reply, m.Name, typesList(g, vars), strings.Join(zeros, ", "), strings.Join(zeros, ", "), strings.Join(vals, ", "), m.Reply, g.conv(m.Result, "r", true))
		}
	}
	return b.Bytes()
}

func typesList(g *gen, vars []*types.Var) string {
	var out []string
	for _, v := range vars {
		out = append(out, g.goType(v.Type()))
	}
	return strings.Join(out, ", ")
}

// roundTrips writes a test that sends a value of every struct, each field
// set (fill), through its converters and wants it back unchanged.
func (g *gen) roundTrips() []byte {
	var b bytes.Buffer
	b.WriteString(header + "package plugins\n\n")
	b.WriteString(g.imports(`"testing"`, "", `"github.com/threatd/threatd/core"`, `"github.com/threatd/threatd/core/ioc"`))
	b.WriteString("var _ = ioc.IOC{}\n\n// TestEveryPortStructCrosses: every struct of the storage port survives its\n// pair of generated converters, each field set.\nfunc TestEveryPortStructCrosses(t *testing.T) {\n")
	names := make([]string, 0, len(g.structs))
	for _, n := range g.structs {
		names = append(names, g.goType(n))
	}
	sort.Strings(names)
	for _, n := range g.structs {
		fmt.Fprintf(&b, "\troundTrip(t, fill[%s](t), %s, %s)\n", g.goType(n), convName(n, true), convName(n, false))
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// roomFor is how many items a stream's caller makes room for once the
// first has come (none come: the list stays nil, as before), when its
// request says how many may: one for each id it asks for, or up to its
// Limit. A list grown from nothing was copied about ten times on the way
// to a batch of the spill's fill or a read of TAXII's feed
// (docs/performance.md).
func roomFor(m *method) string {
	if m.Param == nil {
		return ""
	}
	if _, ok := m.Param.Underlying().(*types.Slice); ok {
		return "min(len(p), idsRoom)"
	}
	if n := namedStruct(m.Param); n != nil {
		st := n.Underlying().(*types.Struct)
		for i := range st.NumFields() {
			if f := st.Field(i); f.Name() == "Limit" && types.Identical(f.Type(), types.Typ[types.Int]) {
				return "min(max(p.Limit, 1), limitRoom)"
			}
		}
	}
	return ""
}
