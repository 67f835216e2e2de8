package main

import (
	"fmt"
	"go/types"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func (g *gen) protoType(t types.Type) (string, error) {
	switch u := t.(type) {
	case *types.Pointer:
		if st := namedStruct(u.Elem()); st != nil {
			g.use(st)
			return st.Obj().Name(), nil
		}
		if isTime(u.Elem()) {
			return "google.protobuf.Timestamp", nil
		}
		s, err := g.scalar(u.Elem())
		if err != nil {
			return "", err
		}
		return "optional " + s, nil
	case *types.Slice:
		if b, ok := u.Elem().Underlying().(*types.Basic); ok && b.Kind() == types.Byte {
			return "bytes", nil
		}
		if st := namedStruct(u.Elem()); st != nil {
			g.use(st)
			return "repeated " + st.Obj().Name(), nil
		}
		s, err := g.scalar(u.Elem())
		if err != nil {
			return "", err
		}
		return "repeated " + s, nil
	case *types.Map:
		k, err := g.scalar(u.Key())
		if err != nil || k != "string" {
			return "", fmt.Errorf("a map's keys must be strings")
		}
		if isTime(u.Elem()) {
			return "map<string, google.protobuf.Timestamp>", nil
		}
		v, err := g.scalar(u.Elem())
		if err != nil {
			return "", err
		}
		return "map<string, " + v + ">", nil
	}
	if isTime(t) {
		return "google.protobuf.Timestamp", nil
	}
	if st := namedStruct(t); st != nil {
		g.use(st)
		return st.Obj().Name(), nil
	}
	return g.scalar(t)
}

func (g *gen) scalar(t types.Type) (string, error) {
	if isDuration(t) {
		return "int64", nil
	}
	b, ok := t.Underlying().(*types.Basic)
	if !ok {
		return "", fmt.Errorf("%s cannot cross the plugin boundary", t)
	}
	switch b.Kind() {
	case types.String:
		return "string", nil
	case types.Bool:
		return "bool", nil
	case types.Int, types.Int64:
		return "int64", nil
	case types.Int32, types.Int16, types.Int8:
		return "int32", nil
	case types.Uint8, types.Uint16, types.Uint32:
		return "uint32", nil
	case types.Uint64, types.Uint:
		return "uint64", nil
	case types.Float64, types.Float32:
		return "double", nil
	}
	return "", fmt.Errorf("%s cannot cross the plugin boundary", t)
}

func isTime(t types.Type) bool     { return t.String() == "time.Time" }
func isDuration(t types.Type) bool { return t.String() == "time.Duration" }

// namedStruct is t when it is a named struct type (not time.Time).
func namedStruct(t types.Type) *types.Named {
	n, ok := t.(*types.Named)
	if !ok || isTime(t) {
		return nil
	}
	if _, ok := n.Underlying().(*types.Struct); !ok {
		return nil
	}
	return n
}

func sliceOfStruct(t types.Type) types.Type {
	s, ok := t.(*types.Slice)
	if !ok {
		return nil
	}
	if n := namedStruct(s.Elem()); n != nil {
		return n
	}
	return nil
}

// partField is the slice of a page, a struct of one slice of structs and
// counts only (core.ThreatList), or nil.
func partField(n *types.Named) *types.Var {
	s := n.Underlying().(*types.Struct)
	var out *types.Var
	for i := range s.NumFields() {
		f := s.Field(i)
		if sliceOfStruct(f.Type()) != nil {
			if out != nil {
				return nil
			}
			out = f
			continue
		}
		if b, ok := f.Type().(*types.Basic); !ok || b.Info()&types.IsInteger == 0 {
			return nil
		}
	}
	return out
}

func tupleVars(t *types.Tuple) []*types.Var {
	out := make([]*types.Var, t.Len())
	for i := range t.Len() {
		out[i] = t.At(i)
	}
	return out
}

func exported(s string) string {
	if s == "" {
		return "Value"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// committed is what the committed protocol says of a message: its fields'
// numbers and types by name, and the numbers it reserved.
type committed struct {
	fields   map[string]field
	reserved []int
}

// readNumbers reads the field numbers of the committed protocol.
func readNumbers(path string) (map[string]*committed, error) {
	out := map[string]*committed{}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	msgRe := regexp.MustCompile(`^message (\w+) \{`)
	fieldRe := regexp.MustCompile(`^\s+((?:repeated |optional )?(?:map<[^>]+>|[\w.]+)) (\w+) = (\d+);`)
	reservedRe := regexp.MustCompile(`^\s+reserved ([\d, ]+);`)
	var cur *committed
	for line := range strings.SplitSeq(string(b), "\n") {
		if m := msgRe.FindStringSubmatch(line); m != nil {
			cur = &committed{fields: map[string]field{}}
			out[m[1]] = cur
			continue
		}
		if cur == nil {
			continue
		}
		if m := fieldRe.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[3])
			cur.fields[m[2]] = field{Name: m[2], Proto: m[1], Number: n}
		}
		if m := reservedRe.FindStringSubmatch(line); m != nil {
			for s := range strings.SplitSeq(m[1], ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil {
					return nil, fmt.Errorf("%s: %q: %v", path, line, err)
				}
				cur.reserved = append(cur.reserved, n)
			}
		}
		if strings.HasPrefix(line, "}") {
			cur = nil
		}
	}
	return out, nil
}

// number assigns field numbers. A field keeps its committed number while
// its name and type stay; a field that is gone, or whose type changed,
// leaves its number reserved, never to be given again (a plugin of an
// older build of the protocol would read it as what it was); a new field
// takes the next number never used.
func (g *gen) number() {
	for _, m := range g.messages {
		old := g.numbers[m.Name]
		if old == nil {
			old = &committed{fields: map[string]field{}}
		}
		next := 1
		reserved := slices.Clone(old.reserved)
		for _, n := range reserved {
			next = max(next, n+1)
		}
		for _, f := range old.fields {
			next = max(next, f.Number+1)
		}
		kept := map[string]bool{}
		for _, f := range m.Fields {
			if o, ok := old.fields[f.Name]; ok && o.Proto == f.Proto {
				f.Number = o.Number
				kept[f.Name] = true
				continue
			}
			f.Number = next
			next++
		}
		for name, o := range old.fields {
			if !kept[name] {
				reserved = append(reserved, o.Number)
			}
		}
		slices.Sort(reserved)
		m.Reserved = slices.Compact(reserved)
	}
}

// comment writes a Go doc text as proto comment lines.
