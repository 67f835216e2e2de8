package cargo

import (
	"encoding/json"
	"strings"

	"github.com/threatd/threatd/core/firewall"
)

var _ firewall.Archives = Adapter{}

// ArchiveIndex is the crate's index file.
func (Adapter) ArchiveIndex(name string) (string, string) { return IndexPath(name), "" }

// ArchiveURLs lists the index's versions, each with no URL: a .crate is
// where the upstream's config.json dl says (firewall.FileLocator), which
// the firewall reads for it.
func (Adapter) ArchiveURLs(doc firewall.Document) (map[string]string, error) {
	out := map[string]string{}
	for _, line := range strings.Split(string(doc.Body), "\n") {
		var l struct {
			Vers string `json:"vers"`
		}
		if strings.TrimSpace(line) == "" || json.Unmarshal([]byte(line), &l) != nil || l.Vers == "" {
			continue
		}
		out[l.Vers] = ""
	}
	return out, nil
}
