package cargo

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/fwtest"
)

// FuzzRewrite: whatever index file the upstream sends, every refused
// version's line is yanked (cargo never resolves to a yanked version),
// and rewriting the output changes nothing.
func FuzzRewrite(f *testing.F) {
	f.Add([]byte("{\"name\":\"x\",\"vers\":\"1.0.0\",\"cksum\":\"aa\",\"yanked\":false}\n{\"name\":\"x\",\"vers\":\"1.0.1\",\"cksum\":\"bb\",\"yanked\":false}\n"))
	f.Add([]byte("{\"vers\":\"2.0.0\",\"yanked\":null}\n\n{\"vers\":\"1.0.\\u0031\"}"))
	f.Add([]byte("{\"vers\":\"evil\",\"yanked\":true,\"Yanked\":false}\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		fwtest.Rewrite(t, Adapter{}, firewall.Document{Body: body, Name: "x"}, func(_ firewall.Adapter, doc firewall.Document) ([]string, error) {
			var offered []string
			for line := range bytes.SplitSeq(doc.Body, []byte("\n")) {
				if len(bytes.TrimSpace(line)) == 0 {
					continue
				}
				// As cargo reads a line: the exact keys.
				var fields map[string]json.RawMessage
				if err := json.Unmarshal(line, &fields); err != nil {
					return nil, err
				}
				var vers string
				_ = json.Unmarshal(fields["vers"], &vers)
				if string(fields["yanked"]) != "true" {
					offered = append(offered, vers)
				}
			}
			return offered, nil
		})
	})
}
