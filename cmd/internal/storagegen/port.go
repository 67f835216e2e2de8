package main

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"log"
	"path/filepath"
	"strings"
)

// portPackages are the packages whose interfaces make up the port:
// core/port assembles the stores of core and of each feature package.
var portPackages = []string{"core/port", "core", "core/community", "core/firewall", "core/webhooks", "core/analysis", "core/exposure"}

func load(root string) (*gen, error) {
	fset := token.NewFileSet()
	var files []*ast.File // every port package's, for their docs
	var portFiles []*ast.File
	for _, dir := range portPackages {
		paths, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
			if dir == "core/port" {
				portFiles = append(portFiles, f)
			}
		}
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check(portPath, fset, portFiles, nil)
	if err != nil {
		return nil, err
	}
	g := &gen{docs: map[string]string{}, seen: map[*types.Named]bool{}, byName: map[string]*message{}}
	order := g.readDocs(files)
	if g.numbers, err = readNumbers(filepath.Join(root, protoDir, "storage.proto")); err != nil {
		return nil, err
	}
	store := pkg.Scope().Lookup("Store").Type().Underlying().(*types.Interface)
	byName := map[string]*types.Func{}
	for i := range store.NumMethods() {
		byName[store.Method(i).Name()] = store.Method(i)
	}
	for _, name := range order["Store"] {
		fn, ok := byName[name]
		if !ok || name == "Close" {
			continue
		}
		m, err := g.method(fn)
		if err != nil {
			return nil, fmt.Errorf("port.Store.%s: %w", name, err)
		}
		g.methods = append(g.methods, m)
	}
	if len(g.methods) != len(byName)-1 {
		return nil, fmt.Errorf("read %d of the port's %d methods", len(g.methods), len(byName)-1)
	}
	for i := 0; i < len(g.structs); i++ { // g.structs grows as fields are read
		g.structMessage(g.structs[i])
	}
	return g, nil
}

// readDocs keeps the doc comments of types and of the port's methods, and
// returns each interface's methods in declaration order (embedded
// interfaces in place).
func (g *gen) readDocs(files []*ast.File) map[string][]string {
	ifaces := map[string]*ast.InterfaceType{} // by package.Name
	pkgOf := map[*ast.InterfaceType]string{}
	for _, f := range files {
		pkg := f.Name.Name
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				key := pkg + "." + ts.Name.Name
				g.docs[key] = doc.Text()
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					ifaces[key], pkgOf[it] = it, pkg
					for _, m := range it.Methods.List {
						if len(m.Names) == 1 {
							g.docs[key+"."+m.Names[0].Name] = m.Doc.Text()
						}
					}
				}
			}
		}
	}
	order := map[string][]string{}
	var walk func(key string) []string
	walk = func(key string) []string {
		var out []string
		it := ifaces[key]
		for _, m := range it.Methods.List {
			if len(m.Names) == 0 {
				switch e := m.Type.(type) {
				case *ast.Ident:
					out = append(out, walk(pkgOf[it]+"."+e.Name)...)
				case *ast.SelectorExpr:
					out = append(out, walk(e.X.(*ast.Ident).Name+"."+e.Sel.Name)...)
				}
				continue
			}
			out = append(out, m.Names[0].Name)
			g.docs["."+m.Names[0].Name] = g.docs[key+"."+m.Names[0].Name]
		}
		return out
	}
	order["Store"] = walk("port.Store")
	return order
}

// method reads one method of the port.
func (g *gen) method(fn *types.Func) (*method, error) {
	sig := fn.Type().(*types.Signature)
	m := &method{Name: fn.Name(), Doc: g.docs["."+fn.Name()]}
	params, results := sig.Params(), sig.Results()
	if params.Len() < 1 || params.At(0).Type().String() != "context.Context" || params.Len() > 2 {
		return nil, fmt.Errorf("a port method takes a context and at most one request")
	}
	if results.Len() < 1 || results.Len() > 2 || results.At(results.Len()-1).Type().String() != "error" {
		return nil, fmt.Errorf("a port method returns at most one reply and an error")
	}
	if results.Len() == 2 {
		m.Result = results.At(0).Type()
	}
	m.Req, m.Reply = m.Name+"Request", m.Name+"Reply"
	if params.Len() == 2 {
		m.Param, m.ParamName = params.At(1).Type(), params.At(1).Name()
		if cb, ok := m.Param.(*types.Signature); ok {
			m.Callback = cb
			r := cb.Results()
			switch {
			case r.Len() == 1 && r.At(0).Type().String() == "error" && cb.Params().Len() > 0:
				m.Kind = callbackStream
			case cb.Params().Len() == 0 && r.Len() >= 3 && r.At(r.Len()-2).Type().String() == "bool" && r.At(r.Len()-1).Type().String() == "error":
				m.Kind = clientStream
			default:
				return nil, fmt.Errorf("a callback is func(…) error or func() (…, bool, error)")
			}
			vars := tupleVars(cb.Params())
			if m.Kind == clientStream {
				vars = tupleVars(r)[:r.Len()-2]
			}
			msg := &message{Name: m.Name + "Item", Doc: fmt.Sprintf("%s is one item of %s's stream.", m.Name+"Item", m.Name)}
			for _, v := range vars {
				if err := g.addField(msg, exported(v.Name()), v.Type()); err != nil {
					return nil, err
				}
			}
			g.addMessage(msg)
			g.addMessage(&message{Name: m.Req})
			if m.Kind == clientStream {
				if err := g.wrap(m.Reply, m.Result); err != nil {
					return nil, err
				}
			}
			return m, nil
		}
		if st := namedStruct(m.Param); st != nil {
			g.use(st)
			m.Req = st.Obj().Name()
		} else if err := g.wrap(m.Req, m.Param, exported(m.ParamName)); err != nil {
			return nil, err
		}
	} else {
		g.addMessage(&message{Name: m.Req})
	}
	switch {
	case m.Result == nil:
		g.addMessage(&message{Name: m.Reply})
	case sliceOfStruct(m.Result) != nil:
		m.Kind, m.Elem = serverStream, sliceOfStruct(m.Result)
		g.use(m.Elem.(*types.Named))
		m.Reply = m.Elem.(*types.Named).Obj().Name()
	case namedStruct(m.Result) != nil:
		st := namedStruct(m.Result)
		if part := partField(st); part != nil {
			m.Kind, m.Part, m.Reply = partStream, part, m.Name+"Part"
			msg := &message{Name: m.Reply, Doc: fmt.Sprintf("%s is one message of %s's stream: the first carries the fields of %s but %s, each other one item of %s.",
				m.Reply, m.Name, st.Obj().Name(), part.Name(), part.Name())}
			s := st.Underlying().(*types.Struct)
			for i := range s.NumFields() {
				if f := s.Field(i); f != part {
					if err := g.addField(msg, f.Name(), f.Type()); err != nil {
						return nil, err
					}
				}
			}
			if err := g.addField(msg, "Item", sliceOfStruct(part.Type())); err != nil {
				return nil, err
			}
			g.addMessage(msg)
			break
		}
		g.use(st)
		m.Reply = st.Obj().Name()
	default:
		if err := g.wrap(m.Reply, m.Result); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// wrap adds a message name of one field (Value, or name).
func (g *gen) wrap(name string, t types.Type, fieldName ...string) error {
	fn := "Value"
	if len(fieldName) > 0 {
		fn = fieldName[0]
	}
	msg := &message{Name: name}
	if err := g.addField(msg, fn, t); err != nil {
		return err
	}
	g.addMessage(msg)
	return nil
}

func (g *gen) addMessage(m *message) {
	if _, dup := g.byName[m.Name]; dup {
		return
	}
	g.byName[m.Name] = m
	g.messages = append(g.messages, m)
}

// use notes a struct type to send.
func (g *gen) use(n *types.Named) {
	if !g.seen[n] {
		g.seen[n] = true
		g.structs = append(g.structs, n)
	}
}

// structMessage adds the message of a struct type.
func (g *gen) structMessage(n *types.Named) {
	msg := &message{Name: n.Obj().Name(), Doc: g.docs[n.Obj().Pkg().Name()+"."+n.Obj().Name()]}
	s := n.Underlying().(*types.Struct)
	for i := range s.NumFields() {
		f := s.Field(i)
		if !f.Exported() {
			log.Fatalf("%s.%s is unexported: a port type crosses whole", n.Obj().Name(), f.Name())
		}
		if err := g.addField(msg, f.Name(), f.Type()); err != nil {
			log.Fatalf("%s.%s: %v", n.Obj().Name(), f.Name(), err)
		}
		if keepsNil(f.Type()) {
			// The wire cannot tell an empty list from none: a patch's []
			// (clear the tags) and nil (leave them) are not the same.
			msg.Fields = append(msg.Fields, &field{Name: f.Name() + "Nil", Proto: "bool"})
		}
	}
	g.addMessage(msg)
}

// keepsNil says whether a struct field's type is a list or a map, whose
// nil and empty the wire would not tell apart.
func keepsNil(t types.Type) bool {
	switch u := t.(type) {
	case *types.Slice:
		b, ok := u.Elem().Underlying().(*types.Basic)
		return !ok || b.Kind() != types.Byte
	case *types.Map:
		return true
	}
	return false
}

// addField adds a field of Go type t to msg.
func (g *gen) addField(msg *message, name string, t types.Type) error {
	p, err := g.protoType(t)
	if err != nil {
		return err
	}
	msg.Fields = append(msg.Fields, &field{Name: name, Proto: p})
	return nil
}

// protoType is the proto type of a Go type.
