package maven

import (
	"testing"

	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/fwtest"
)

// FuzzRewrite: whatever maven-metadata.xml the upstream sends, the
// rewrite offers no refused version (in <versions>, <latest> or
// <release>), and rewriting its output changes nothing.
func FuzzRewrite(f *testing.F) {
	f.Add([]byte(meta))
	f.Add([]byte(`<metadata><versioning><latest>1.0.1</latest><release>1.0.1</release><versions><version>1.0.0</version><version>1.0.&#49;</version><version><![CDATA[2.0.0]]></version></versions></versioning></metadata>`))
	f.Add([]byte(`<metadata><versioning><versions><version>evil-1</version></versions></versioning></metadata>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fwtest.Rewrite(t, Adapter{}, firewall.Document{Body: body, Name: "org.example:lib"}, func(_ firewall.Adapter, doc firewall.Document) ([]string, error) {
			els, err := elements(doc.Body)
			var vs []string
			for _, e := range els {
				if e.inVersions || e.name == "latest" || e.name == "release" {
					vs = append(vs, e.text)
				}
			}
			return vs, err
		})
	})
}
