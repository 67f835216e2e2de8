// Package goproxy is the registry firewall's adapter for the Go module
// proxy protocol (GOPROXY): what a request path asks for, judged on the
// module and version the upstream will resolve, and the upstream path
// rebuilt from them, never the bytes the client wrote.
package goproxy

import (
	"strings"

	"golang.org/x/mod/module"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// Kind is what a module proxy request asks for.
type Kind int

// The kinds of module proxy requests.
const (
	// SumDB is the checksum database proxy (/sumdb/…), passed through at Path.
	SumDB Kind = iota + 1
	// List is a module's version list, @v/list.
	List
	// Latest is @latest.
	Latest
	// File is a version's .info, .mod or .zip.
	File
)

// Request is a module proxy request, as judged.
type Request struct {
	Kind Kind
	// Module is the module path; Version a File's version (canonical
	// semver, +incompatible kept); Ext its extension (.info, .mod, .zip).
	Module, Version, Ext string
	// Path is a SumDB request's path below the proxy root, checked
	// (firewall.CleanPath).
	Path string
}

// Parse reads the escaped path below the proxy root. A path of an unknown
// shape is (Request{}, false, nil); a module path or version the firewall
// cannot judge is a *firewall.Unjudgeable.
func Parse(escaped string) (Request, bool, error) {
	if strings.HasPrefix(escaped, "sumdb/") {
		p, err := firewall.CleanPath(core.RegistryGo, escaped)
		return Request{Kind: SumDB, Path: p}, err == nil, err
	}
	escMod, what, ok := strings.Cut(escaped, "/@")
	if !ok {
		return Request{}, false, nil
	}
	mod, err := module.UnescapePath(escMod)
	if err != nil {
		return Request{}, false, firewall.CannotJudge(core.RegistryGo, "module path", escMod, "%v", err)
	}
	r := Request{Module: mod}
	switch {
	case what == "v/list":
		r.Kind = List
	case what == "latest":
		r.Kind = Latest
	case strings.HasPrefix(what, "v/"):
		file := strings.TrimPrefix(what, "v/")
		for _, ext := range []string{".info", ".mod", ".zip"} {
			if v, ok := strings.CutSuffix(file, ext); ok {
				r.Version, r.Ext = v, ext
			}
		}
		if r.Ext == "" || strings.Contains(r.Version, "/") {
			return Request{}, false, nil
		}
		ver, err := module.UnescapeVersion(r.Version)
		if err == nil {
			err = module.Check(mod, ver)
		}
		if err != nil {
			return Request{}, false, firewall.CannotJudge(core.RegistryGo, "version", r.Version, "%v", err)
		}
		r.Kind, r.Version = File, ver
	default:
		return Request{}, false, nil
	}
	return r, true, nil
}

// ModulePath is the upstream path of the module, below the proxy root.
func ModulePath(mod string) string {
	esc, err := module.EscapePath(mod)
	if err != nil {
		return mod // Parse checked it
	}
	return esc
}

// UpstreamPath is the path of the request below the proxy root, rebuilt
// from what was judged.
func (r Request) UpstreamPath() string {
	switch r.Kind {
	case SumDB:
		return r.Path
	case List:
		return ModulePath(r.Module) + "/@v/list"
	case Latest:
		return ModulePath(r.Module) + "/@latest"
	}
	return FilePath(r.Module, r.Version, r.Ext)
}

// FilePath is the upstream path of a version's .info, .mod or .zip.
func FilePath(mod, version, ext string) string {
	esc, err := module.EscapeVersion(version)
	if err != nil {
		esc = version
	}
	return ModulePath(mod) + "/@v/" + esc + ext
}
