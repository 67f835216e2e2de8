package npm

import (
	"encoding/json"

	"github.com/threatd/threatd/core/firewall"
)

var _ firewall.Archives = Adapter{}

// ArchiveIndex is the package document.
func (Adapter) ArchiveIndex(name string) (string, string) {
	return DocumentPath(name), "application/json"
}

// ArchiveURLs reads each version's dist.tarball.
func (Adapter) ArchiveURLs(doc firewall.Document) (map[string]string, error) {
	var d struct {
		Versions map[string]struct {
			Dist struct {
				Tarball string `json:"tarball"`
			} `json:"dist"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(doc.Body, &d); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(d.Versions))
	for v, x := range d.Versions {
		if x.Dist.Tarball != "" {
			out[v] = x.Dist.Tarball
		}
	}
	return out, nil
}
