package npm

import (
	"github.com/threatd/threatd/core/firewall"
)

var _ firewall.Archives = Adapter{}

// ArchiveIndex is the package document.
func (Adapter) ArchiveIndex(name string) (string, string) {
	return DocumentPath(name), "application/json"
}

// ArchiveURLs reads each version's dist.tarball (Files, by version).
func (a Adapter) ArchiveURLs(doc firewall.Document) (map[string]string, error) {
	files, err := a.Files(doc)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, f := range files {
		for _, v := range f.Versions {
			out[v] = f.URL
		}
	}
	return out, nil
}
