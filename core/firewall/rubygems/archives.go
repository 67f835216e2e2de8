package rubygems

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/threatd/threatd/core/firewall"
)

var _ firewall.Archives = Adapter{}

// ArchiveIndex is the versions API's JSON.
func (a Adapter) ArchiveIndex(name string) (string, string) { return a.FactsDocument(name) }

// ArchiveURLs names each version's .gem (a platform's as the index lists
// it: 1.0.0-java).
func (Adapter) ArchiveURLs(doc firewall.Document) (map[string]string, error) {
	var vs []struct {
		Number   string `json:"number"`
		Platform string `json:"platform"`
	}
	if err := json.Unmarshal(doc.Body, &vs); err != nil {
		return nil, fmt.Errorf("versions of %s: %w", doc.Name, err)
	}
	out := make(map[string]string, len(vs))
	for _, v := range vs {
		key := v.Number
		if v.Platform != "" && v.Platform != "ruby" {
			key += "-" + v.Platform
		}
		out[key] = "gems/" + url.PathEscape(doc.Name+"-"+key) + ".gem"
	}
	return out, nil
}
