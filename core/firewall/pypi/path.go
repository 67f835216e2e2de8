// Package pypi is the registry firewall's adapter for PyPI's simple
// repository API (PEP 503 and PEP 691): what a request path asks for,
// judged on the project and file the upstream will resolve, and the
// version a distribution's file name carries.
package pypi

import (
	"net/url"
	"strings"
	"unicode"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// Kind is what a simple-index request asks for.
type Kind int

// The kinds of simple-index requests.
const (
	// Root is the index of every project (/simple/), passed through.
	Root Kind = iota + 1
	// Project is a project page, /simple/{project}/.
	Project
	// File is a distribution file of a project, or its PEP 658 metadata.
	File
)

// Request is a simple-index request, as judged.
type Request struct {
	Kind Kind
	// Project is the project name in PEP 503 normal form.
	Project string
	// File is the distribution's file name; Metadata says the request is
	// for its PEP 658 metadata (File + ".metadata").
	File     string
	Metadata bool
}

// Parse reads the escaped path below {base}/firewall/pypi/. A path of an
// unknown shape is (Request{}, false, nil); a project name or file name
// the firewall cannot judge is a *firewall.Unjudgeable.
func Parse(escaped string) (Request, bool, error) {
	rest, ok := strings.CutPrefix(escaped, "simple/")
	if !ok {
		return Request{Kind: Root}, escaped == "simple", nil
	}
	if rest == "" {
		return Request{Kind: Root}, true, nil
	}
	segs := strings.Split(rest, "/")
	if len(segs) > 2 {
		return Request{}, false, nil
	}
	project, err := url.PathUnescape(segs[0])
	if err != nil {
		return Request{}, false, firewall.CannotJudge(core.RegistryPyPI, "project name", segs[0], "it is not valid percent-encoding")
	}
	key, err := core.CanonicalKey(core.TypePackage, core.RegistryPyPI, project)
	if err != nil {
		return Request{}, false, firewall.CannotJudge(core.RegistryPyPI, "project name", project, "it is not a valid PyPI project name (PEP 508)")
	}
	r := Request{Kind: Project, Project: strings.TrimPrefix(key, "package:"+core.RegistryPyPI+":")}
	if len(segs) == 1 || segs[1] == "" {
		return r, true, nil
	}
	file, err := url.PathUnescape(segs[1])
	if err != nil || file == "." || file == ".." || strings.ContainsAny(file, "/\\?#") || strings.IndexFunc(file, unicode.IsControl) >= 0 {
		return Request{}, false, firewall.CannotJudge(core.RegistryPyPI, "file name", segs[1], "a distribution file is one file name")
	}
	r.Kind = File
	r.File, r.Metadata = strings.CutSuffix(file, ".metadata")
	return r, true, nil
}

// ProjectPath is the upstream path of a project page, below the index root.
func ProjectPath(project string) string { return url.PathEscape(project) + "/" }

// sdistSuffixes are the extensions of source distributions and eggs.
var sdistSuffixes = []string{".tar.gz", ".tar.bz2", ".tar.xz", ".tar.Z", ".tgz", ".tar", ".zip", ".egg"}

// Version is the version in a distribution's file name: a wheel's second
// field, or what follows the project name in a source distribution ("" when
// the name does not parse or names another project: the firewall then
// treats the file as naming every version, so a report of any version of
// the project refuses it).
func Version(project, filename string) string {
	want := core.NormalizePyPIName(project)
	if w, ok := strings.CutSuffix(filename, ".whl"); ok {
		if parts := strings.Split(w, "-"); len(parts) >= 5 && core.NormalizePyPIName(parts[0]) == want {
			return parts[1]
		}
		return ""
	}
	base := filename
	for _, s := range sdistSuffixes {
		if b, ok := strings.CutSuffix(base, s); ok {
			base = b
			break
		}
	}
	for i := 0; i < len(base); i++ {
		if base[i] == '-' && core.NormalizePyPIName(base[:i]) == want {
			ver := base[i+1:]
			if strings.HasSuffix(filename, ".egg") {
				ver, _, _ = strings.Cut(ver, "-")
			}
			return ver
		}
	}
	return ""
}
