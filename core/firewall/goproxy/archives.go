package goproxy

import (
	"strings"

	"golang.org/x/mod/module"

	"github.com/threatd/threatd/core/firewall"
)

var _ firewall.Archives = Adapter{}

// ArchiveIndex is the module's version list.
func (Adapter) ArchiveIndex(mod string) (string, string) {
	esc, err := module.EscapePath(mod)
	if err != nil {
		esc = mod
	}
	return esc + "/@v/list", typeText
}

// ArchiveURLs names each listed version's module zip.
func (Adapter) ArchiveURLs(doc firewall.Document) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range strings.Fields(string(doc.Body)) {
		out[v] = FilePath(doc.Name, v, ".zip")
	}
	return out, nil
}
