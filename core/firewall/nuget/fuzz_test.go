package nuget

import (
	"encoding/json"
	"testing"

	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/fwtest"
)

// FuzzRewrite: whatever flat container version list or registration index
// or page the upstream sends, the rewrite offers no refused version, and
// rewriting the output changes nothing.
func FuzzRewrite(f *testing.F) {
	f.Add(false, []byte(`{"versions":["1.0.0","1.0.1","2.0.0"]}`))
	f.Add(true, []byte(`{"count":1,"items":[{"count":2,"lower":"1.0.0","upper":"1.0.1","items":[{"catalogEntry":{"version":"1.0.0","published":"2026-01-01T00:00:00Z"}},{"catalogEntry":{"version":"1.0.1"}}]}]}`))
	f.Add(true, []byte(`{"items":[{"@id":"https://api.nuget.invalid/v3/registration5/x/page/1.0.0/2.0.0.json","count":3,"lower":"1.0.0","upper":"2.0.0"}]}`))
	f.Fuzz(func(t *testing.T, registration bool, body []byte) {
		doc := firewall.Document{Body: body, Name: "x", Variant: variantFlat, URL: "https://api.nuget.invalid/v3-flatcontainer/x/index.json"}
		if !registration {
			fwtest.Rewrite(t, Adapter{}, doc, nil)
			return
		}
		doc.Variant, doc.URL = variantRegistration, "https://api.nuget.invalid/v3/registration5/x/index.json"
		fwtest.Rewrite(t, Adapter{}, doc, itemLeaves)
	})
}

// itemLeaves are the versions a client reads from a registration index or
// page: the leaves of its items lists, at any depth (an index's pages
// inline theirs).
func itemLeaves(_ firewall.Adapter, doc firewall.Document) ([]string, error) {
	var v any
	if err := json.Unmarshal(doc.Body, &v); err != nil {
		return nil, err
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if items, ok := x["items"].([]any); ok {
				for _, it := range items {
					if ver := leafVersion(it); ver != "" {
						out = append(out, ver)
					}
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out, nil
}
