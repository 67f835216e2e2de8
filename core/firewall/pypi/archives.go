package pypi

import (
	"strings"

	"github.com/threatd/threatd/core/firewall"
)

var _ firewall.Archives = Adapter{}

// ArchiveIndex is the project's JSON page (PEP 691).
func (Adapter) ArchiveIndex(name string) (string, string) { return ProjectPath(name), TypeJSON }

// ArchiveURLs picks one file of each version: its sdist, which runs
// setup.py when pip builds it, else a pure-Python wheel, else its first
// wheel.
func (Adapter) ArchiveURLs(doc firewall.Document) (map[string]string, error) {
	ls, err := links(doc)
	if err != nil {
		return nil, err
	}
	rank := func(name string) int {
		n := strings.ToLower(name)
		switch {
		case strings.HasSuffix(n, ".tar.gz"), strings.HasSuffix(n, ".zip"), strings.HasSuffix(n, ".tar.bz2"):
			return 3
		case strings.HasSuffix(n, "-none-any.whl"):
			return 2
		case strings.HasSuffix(n, ".whl"):
			return 1
		}
		return 0
	}
	out := map[string]string{}
	best := map[string]int{}
	for _, l := range ls {
		r := rank(l.Filename)
		if r == 0 {
			continue
		}
		for _, v := range FileVersions(doc.Name, l.Filename, l.URL) {
			if v != "" && r > best[v] {
				out[v], best[v] = l.URL, r
			}
		}
	}
	return out, nil
}
