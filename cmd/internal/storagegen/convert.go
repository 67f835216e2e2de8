package main

import (
	"bytes"
	"fmt"
	"go/types"
	"log"
	"strings"
)

// goType writes a Go type as the generated code names it.
func (g *gen) goType(t types.Type) string {
	return types.TypeString(t, func(p *types.Package) string { return p.Name() })
}

// conv writes the expression converting x of Go type t to the wire (to)
// or from it.
func (g *gen) conv(t types.Type, x string, to bool) string {
	switch u := t.(type) {
	case *types.Pointer:
		if st := namedStruct(u.Elem()); st != nil {
			if to {
				return fmt.Sprintf("ptrTo(%s, %s)", x, convName(st, true))
			}
			return fmt.Sprintf("ptrFrom(%s, %s)", x, convName(st, false))
		}
		if isTime(u.Elem()) {
			if to {
				return "tsPtr(" + x + ")"
			}
			return "fromTSPtr(" + x + ")"
		}
		wire := g.wireScalar(u.Elem())
		if to {
			return fmt.Sprintf("optTo(%s, func(v %s) %s { return %s })", x, g.goType(u.Elem()), wire, g.scalarConv(u.Elem(), "v", true))
		}
		return fmt.Sprintf("optFrom(%s, func(v %s) %s { return %s })", x, wire, g.goType(u.Elem()), g.scalarConv(u.Elem(), "v", false))
	case *types.Slice:
		if b, ok := u.Elem().Underlying().(*types.Basic); ok && b.Kind() == types.Byte {
			if t.String() != "[]byte" {
				if to {
					return "[]byte(" + x + ")"
				}
				return g.goType(t) + "(" + x + ")"
			}
			return x
		}
		if st := namedStruct(u.Elem()); st != nil {
			return fmt.Sprintf("each(%s, %s)", x, convName(st, to))
		}
		if g.wireScalar(u.Elem()) == g.goType(u.Elem()) {
			return x
		}
		if to {
			return fmt.Sprintf("each(%s, func(v %s) %s { return %s })", x, g.goType(u.Elem()), g.wireScalar(u.Elem()), g.scalarConv(u.Elem(), "v", true))
		}
		return fmt.Sprintf("each(%s, func(v %s) %s { return %s })", x, g.wireScalar(u.Elem()), g.goType(u.Elem()), g.scalarConv(u.Elem(), "v", false))
	case *types.Map:
		if isTime(u.Elem()) {
			if to {
				return "mapOf(" + x + ", ts)"
			}
			return "mapOf(" + x + ", fromTS)"
		}
		if g.wireScalar(u.Elem()) == g.goType(u.Elem()) {
			return x
		}
		if to {
			return fmt.Sprintf("mapOf(%s, func(v %s) %s { return %s })", x, g.goType(u.Elem()), g.wireScalar(u.Elem()), g.scalarConv(u.Elem(), "v", true))
		}
		return fmt.Sprintf("mapOf(%s, func(v %s) %s { return %s })", x, g.wireScalar(u.Elem()), g.goType(u.Elem()), g.scalarConv(u.Elem(), "v", false))
	}
	if isTime(t) {
		if to {
			return "ts(" + x + ")"
		}
		return "fromTS(" + x + ")"
	}
	if st := namedStruct(t); st != nil {
		return convName(st, to) + "(" + x + ")"
	}
	return g.scalarConv(t, x, to)
}

// wireScalar is the Go type protoc-gen-go gives a scalar's field.
func (g *gen) wireScalar(t types.Type) string {
	p, err := g.scalar(t)
	if err != nil {
		log.Fatal(err)
	}
	return map[string]string{"string": "string", "bool": "bool", "int64": "int64", "int32": "int32", "uint32": "uint32", "uint64": "uint64", "double": "float64"}[p]
}

// scalarConv converts a scalar between its Go type and its wire type.
func (g *gen) scalarConv(t types.Type, x string, to bool) string {
	wire, goT := g.wireScalar(t), g.goType(t)
	if wire == goT {
		return x
	}
	if to {
		return wire + "(" + x + ")"
	}
	return goT + "(" + x + ")"
}

// convName is the converter of a struct type to or from the wire.
func convName(n *types.Named, to bool) string {
	name := lowerFirst(n.Obj().Name())
	if to {
		return name + "ToPB"
	}
	return name + "FromPB"
}

// lowerFirst lower-cases a name's first word (IOC → ioc, TokenOwner → tokenOwner).
func lowerFirst(s string) string {
	r := []rune(s)
	i := 0
	for i < len(r) && r[i] >= 'A' && r[i] <= 'Z' {
		i++
	}
	switch {
	case i == len(r):
		return strings.ToLower(s)
	case i > 1:
		i--
	}
	return strings.ToLower(string(r[:i])) + string(r[i:])
}

func (g *gen) imports(extra ...string) string {
	var b strings.Builder
	b.WriteString("import (\n")
	for _, imp := range extra {
		b.WriteString("\t" + imp + "\n")
		if imp == `"github.com/threatd/threatd/core"` {
			b.WriteString(featureMark)
		}
	}
	b.WriteString(")\n\n")
	return b.String()
}

// converters writes a pair of converters per struct type.
func (g *gen) converters() []byte {
	var b bytes.Buffer
	b.WriteString(header + "package plugins\n\n")
	b.WriteString(g.imports(`"time"`, "", `"github.com/threatd/threatd/core"`, `"github.com/threatd/threatd/core/ioc"`, `pb "github.com/threatd/threatd/plugins/proto/v2"`))
	b.WriteString("var (\n\t_ = ioc.IOC{}\n\t_ = time.Time{}\n)\n\n")
	for _, n := range g.structs {
		s := n.Underlying().(*types.Struct)
		goT := g.goType(n)
		fmt.Fprintf(&b, "// %s sends a %s.\nfunc %s(v %s) *pb.%s {\n\treturn &pb.%s{\n", convName(n, true), goT, convName(n, true), goT, n.Obj().Name(), n.Obj().Name())
		for i := range s.NumFields() {
			f := s.Field(i)
			fmt.Fprintf(&b, "\t\t%s: %s,\n", f.Name(), g.conv(f.Type(), "v."+f.Name(), true))
			if keepsNil(f.Type()) {
				fmt.Fprintf(&b, "\t\t%sNil: v.%s == nil,\n", f.Name(), f.Name())
			}
		}
		b.WriteString("\t}\n}\n\n")
		fmt.Fprintf(&b, "// %s reads a %s (a nil message is the zero value).\nfunc %s(m *pb.%s) %s {\n\tif m == nil {\n\t\treturn %s{}\n\t}\n\treturn %s{\n",
			convName(n, false), goT, convName(n, false), n.Obj().Name(), goT, goT, goT)
		for i := range s.NumFields() {
			f := s.Field(i)
			if keepsNil(f.Type()) {
				helper := "keepNilSlice"
				if _, ok := f.Type().(*types.Map); ok {
					helper = "keepNilMap"
				}
				fmt.Fprintf(&b, "\t\t%s: %s(m.%sNil, %s),\n", f.Name(), helper, f.Name(), g.conv(f.Type(), "m."+f.Name(), false))
				continue
			}
			fmt.Fprintf(&b, "\t\t%s: %s,\n", f.Name(), g.conv(f.Type(), "m."+f.Name(), false))
		}
		b.WriteString("\t}\n}\n\n")
	}
	return b.Bytes()
}

// request writes the expression of a method's request message from p.
func (g *gen) request(m *method, p string) string {
	switch {
	case m.Param == nil || m.Callback != nil:
		return "&pb." + m.Req + "{}"
	case namedStruct(m.Param) != nil:
		return g.conv(m.Param, p, true)
	}
	return fmt.Sprintf("&pb.%s{%s: %s}", m.Req, exported(m.ParamName), g.conv(m.Param, p, true))
}
