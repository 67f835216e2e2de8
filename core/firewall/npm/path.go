// Package npm is the registry firewall's adapter for npm registries: what a
// request path asks for, judged on the package name and version the
// upstream will resolve, never on the bytes the client wrote.
package npm

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/versioning"
)

// Kind is what an npm request asks for.
type Kind int

// The kinds of npm requests.
const (
	// Endpoint is a registry endpoint under /-/ (ping, search), passed
	// through at Path.
	Endpoint Kind = iota + 1
	// Document is a package document, /{name}.
	Document
	// VersionDocument is one version's document, /{name}/{version or tag}.
	VersionDocument
	// Tarball is a package file, /{name}/-/{file}.
	Tarball
)

// Request is an npm request, as judged.
type Request struct {
	Kind Kind
	// Name is the package name (@scope/name), valid for npm.
	Name string
	// Spec is a VersionDocument's version or dist-tag.
	Spec string
	// File is a Tarball's file name.
	File string
	// Path is an Endpoint's path below the registry root, checked
	// (firewall.CleanPath) and without its leading slash; "" is the root.
	Path string
}

// tagName is a dist-tag npm accepts in a path (latest, next, beta-2).
var tagName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~-]{0,127}$`)

// tarballName is a tarball file name: no separator, no dot segment.
var tarballName = regexp.MustCompile(`^[A-Za-z0-9._~+@-]{1,300}$`)

// Parse reads the escaped path below the registry root ("" for the root).
// A path of an unknown shape is (Request{}, nil, false); a name, version
// or endpoint path the firewall cannot judge is a *firewall.Unjudgeable.
func Parse(escaped string) (Request, bool, error) {
	if escaped == "" {
		return Request{Kind: Endpoint}, true, nil
	}
	if escaped == "-" || strings.HasPrefix(escaped, "-/") {
		p, err := firewall.CleanPath(core.RegistryNPM, escaped)
		return Request{Kind: Endpoint, Path: p}, err == nil, err
	}
	unescaped, err := url.PathUnescape(escaped)
	if err != nil {
		return Request{}, false, firewall.CannotJudge(core.RegistryNPM, "path", escaped, "it is not valid percent-encoding")
	}
	segs := strings.Split(unescaped, "/")
	n := 1
	if strings.HasPrefix(unescaped, "@") {
		n = 2
	}
	if len(segs) < n {
		return Request{}, false, firewall.CannotJudge(core.RegistryNPM, "package name", unescaped, "a scoped name is @scope/name")
	}
	name, rest := strings.Join(segs[:n], "/"), segs[n:]
	if _, err := core.CanonicalKey(core.TypePackage, core.RegistryNPM, name); err != nil {
		return Request{}, false, firewall.CannotJudge(core.RegistryNPM, "package name", name, "%s", reason(err))
	}
	r := Request{Name: name}
	switch {
	case len(rest) == 0:
		r.Kind = Document
	case len(rest) == 1:
		spec := rest[0]
		if versioning.Check(core.RegistryNPM, spec) != nil && !tagName.MatchString(spec) {
			return Request{}, false, firewall.CannotJudge(core.RegistryNPM, "version", spec, "it is neither an npm version nor a dist-tag")
		}
		r.Kind, r.Spec = VersionDocument, spec
	case len(rest) == 2 && rest[0] == "-":
		if !tarballName.MatchString(rest[1]) || rest[1] == "." || rest[1] == ".." {
			return Request{}, false, firewall.CannotJudge(core.RegistryNPM, "tarball name", rest[1], "a tarball is one file name of letters, digits and -._~+@")
		}
		r.Kind, r.File = Tarball, rest[1]
	default:
		return Request{}, false, nil
	}
	return r, true, nil
}

// reason is the message of a validation error without its field name.
func reason(err error) string {
	if fe, ok := err.(*core.FieldError); ok {
		return fe.Message
	}
	return err.Error()
}

// Escape is a package name as npm registries spell it in a path
// (@scope%2fname).
func Escape(name string) string {
	return strings.Replace(url.PathEscape(name), "%2F", "%2f", 1)
}

// DocumentPath is the upstream path of name's document, below the root.
func DocumentPath(name string) string { return Escape(name) }

// VersionPath is the upstream path of one version's document.
func VersionPath(name, spec string) string { return Escape(name) + "/" + url.PathEscape(spec) }
