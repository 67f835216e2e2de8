package pypi

import (
	"encoding/json"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"

	"github.com/threatd/threatd/core/firewall"
)

// Document is a page as the proxy hands it to the adapter.
func Document(body []byte, contentType string) firewall.Document {
	return firewall.Document{Body: body, ContentType: contentType, URL: "https://up.example/simple/evil/", Name: "evil"}
}

// rewrittenYanks are the files a rewritten page marks yanked.
func rewrittenYanks(body []byte, contentType string) map[string]bool {
	out := map[string]bool{}
	if strings.Contains(contentType, "json") {
		var d struct {
			Files []struct {
				Filename string `json:"filename"`
				Yanked   any    `json:"yanked"`
			} `json:"files"`
		}
		_ = json.Unmarshal(body, &d)
		for _, f := range d.Files {
			if y, ok := f.Yanked.(string); ok && y != "" || f.Yanked == true {
				out[f.Filename] = true
			}
		}
		return out
	}
	z := xhtml.NewTokenizer(strings.NewReader(string(body)))
	var yanked bool
	for {
		switch z.Next() {
		case xhtml.ErrorToken:
			return out
		case xhtml.StartTagToken:
			t := z.Token()
			yanked = false
			for _, a := range t.Attr {
				if t.Data == "a" && a.Key == "data-yanked" {
					yanked = true
				}
			}
		case xhtml.TextToken:
			if yanked {
				out[strings.TrimSpace(string(z.Text()))] = true
			}
		}
	}
}

// A hostile project page cannot inject markup through the rewritten page.
func TestPageHostile(t *testing.T) {
	page := `<a href="f/x-1.0.tar.gz#sha256=aa" data-requires-python="&gt;=3&quot;&gt;&lt;script&gt;" data-a"><script>alert(1)</script>x-1.0.tar.gz</a>`
	out, err := rewriteHTML([]byte(page), "https://up.example/simple/x/", "https://fw.example/simple/x/", "x", func(string) (bool, string) { return false, "" })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "<script>") || strings.Contains(string(out), `data-a"`) || !strings.Contains(string(out), `data-requires-python="&gt;=3&#34;&gt;&lt;script&gt;"`) {
		t.Fatalf("%s", out)
	}
}

// FuzzRewrite: whatever a project page holds, every file the rewrite
// leaves on it whose name or URL carries a refused version is marked
// yanked, in both forms of the page.
func FuzzRewrite(f *testing.F) {
	f.Add([]byte(`<a href="../../files/evil-1.0.1-py3-none-any.whl#sha256=aa">evil-1.0.1-py3-none-any.whl</a><a href="evil-1.0.0.tar.gz">evil-1.0.0.tar.gz</a>`), false)
	f.Add([]byte(`<base href="https://other/"><a href="x/evil-1.0.1.tar.gz">evil-1.0.0.tar.gz</a>`), false)
	f.Add([]byte(`{"meta":{"api-version":"1.1"},"files":[{"filename":"evil-1.0.1.tar.gz","url":"evil-1.0.1.tar.gz","hashes":{}}]}`), true)
	judge := func(v string) (bool, string) { return v == "1.0.1", "refused" }
	a := Adapter{}
	f.Fuzz(func(t *testing.T, body []byte, json bool) {
		ct := "text/html"
		if json {
			ct = TypeJSON
		}
		doc := Document(body, ct)
		out, err := a.Rewrite(doc, judge, "https://fw.example/pypi")
		if err != nil {
			return
		}
		// Read the rewritten page back as a client does, against the
		// links the upstream gave (the rewrite points them at the firewall).
		files, err := a.Files(Document(body, ct))
		if err != nil {
			return
		}
		back, err := links(Document(out.Body, out.ContentType))
		if err != nil {
			t.Fatalf("the rewritten page does not parse: %v\n%s", err, out.Body)
		}
		yanked := rewrittenYanks(out.Body, out.ContentType)
		for _, l := range back {
			f, ok := files[l.Filename]
			if !ok {
				continue
			}
			for _, v := range f.Versions {
				if v == "1.0.1" && !yanked[l.Filename] {
					t.Fatalf("%s (of %s) is refused but not marked yanked:\n%s", l.Filename, f.URL, out.Body)
				}
			}
		}
	})
}
