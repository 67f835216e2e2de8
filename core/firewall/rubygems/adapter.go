package rubygems

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// Adapter is the firewall's adapter for the RubyGems compact index.
type Adapter struct{}

var (
	_ firewall.Adapter    = Adapter{}
	_ firewall.FactSource = Adapter{}
	_ firewall.Listing    = Adapter{}
)

const typeText = "text/plain; charset=utf-8"

// Registry is rubygems.
func (Adapter) Registry() string { return core.RegistryRubyGems }

// Defaults: rubygems.org.
func (Adapter) Defaults() firewall.Upstream {
	return firewall.Upstream{URL: "https://rubygems.org"}
}

// Route reads a request (Parse). A refused file's text is in the reason
// phrase too: gem and Bundler print a failed download's status line.
func (Adapter) Route(r firewall.Request) (firewall.Route, bool, error) {
	req, ok, err := Parse(r.Path)
	if err != nil || !ok {
		return firewall.Route{Refusal: firewall.RefuseReason}, ok, err
	}
	switch req.Kind {
	case Versions:
		return firewall.Route{Kind: firewall.Metadata, Upstream: req.Path, Listing: true}, true, nil
	case Names:
		return firewall.Route{Kind: firewall.PassThrough, Upstream: req.Path, ContentType: typeText}, true, nil
	case Info:
		return firewall.Route{Kind: firewall.Metadata, Name: req.Name, Upstream: req.Path}, true, nil
	}
	return firewall.Route{Kind: firewall.Artifact, Name: req.Name, Version: req.Version, Upstream: req.Path,
		ContentType: "application/octet-stream", Refusal: firewall.RefuseReason}, true, nil
}

// lineVersion is the version of an /info line or a /versions entry: its
// first field without a platform (1.0.0-java is 1.0.0) or a yank mark.
func lineVersion(entry string) string {
	v, _, _ := strings.Cut(strings.TrimPrefix(entry, "-"), " ")
	v, _, _ = strings.Cut(v, "-")
	return v
}

// Rewrite drops the lines of refused versions from an /info file.
func (Adapter) Rewrite(doc firewall.Document, judge firewall.Judge, _ string) (firewall.Rendering, error) {
	var out bytes.Buffer
	out.Grow(len(doc.Body))
	for line := range bytes.Lines(doc.Body) {
		s := strings.TrimRight(string(line), "\n")
		if s != "---" && s != "" && !strings.HasPrefix(s, "created_at:") {
			if r, _ := judge(lineVersion(s)); r {
				continue
			}
		}
		out.Write(line)
	}
	return firewall.Rendering{Body: out.Bytes(), ContentType: typeText}, nil
}

// RewriteListing rewrites /versions: a gem with a refused version loses
// it from every line, and its lines carry the MD5 of its /info as the
// firewall serves it (info); a gem left with no version loses its lines.
func (Adapter) RewriteListing(doc firewall.Document, judges func(name string) firewall.Judge, info func(name string) ([]byte, error)) (firewall.Rendering, error) {
	var out bytes.Buffer
	out.Grow(len(doc.Body))
	header := true
	sums := map[string]string{}
	for line := range bytes.Lines(doc.Body) {
		if header {
			out.Write(line)
			header = string(bytes.TrimSpace(line)) != "---"
			continue
		}
		fields := strings.Fields(string(line))
		if len(fields) != 3 {
			out.Write(line)
			continue
		}
		judge := judges(fields[0])
		if judge == nil {
			out.Write(line)
			continue
		}
		var kept []string
		dropped := false
		for _, e := range strings.Split(fields[1], ",") {
			if r, _ := judge(lineVersion(e)); r {
				dropped = true
				continue
			}
			kept = append(kept, e)
		}
		if !dropped {
			out.Write(line)
			continue
		}
		if len(kept) == 0 {
			continue
		}
		sum, ok := sums[fields[0]]
		if !ok {
			b, err := info(fields[0])
			if err != nil {
				return firewall.Rendering{}, err
			}
			h := md5.Sum(b)
			sum = hex.EncodeToString(h[:])
			sums[fields[0]] = sum
		}
		fmt.Fprintf(&out, "%s %s %s\n", fields[0], strings.Join(kept, ","), sum)
	}
	return firewall.Rendering{Body: out.Bytes(), ContentType: typeText}, nil
}

// InfoPath is the listing's package document of a gem.
func (Adapter) InfoPath(name string) string { return "info/" + name }

// Versions reads an /info file's versions (with a created_at where its
// line has one), or the versions API's JSON with their created_at.
func (Adapter) Versions(doc firewall.Document) ([]firewall.Published, error) {
	if strings.Contains(doc.URL, "/api/v1/versions/") {
		var vs []struct {
			Number    string `json:"number"`
			CreatedAt string `json:"created_at"`
		}
		if err := json.Unmarshal(doc.Body, &vs); err != nil {
			return nil, fmt.Errorf("versions of %s: %w", doc.Name, err)
		}
		out := make([]firewall.Published, 0, len(vs))
		for _, v := range vs {
			p := firewall.Published{Version: v.Number}
			if t, err := time.Parse(time.RFC3339, v.CreatedAt); err == nil {
				p.Time = t
			}
			out = append(out, p)
		}
		return out, nil
	}
	var out []firewall.Published
	for _, line := range strings.Split(string(doc.Body), "\n") {
		if line == "---" || line == "" || strings.HasPrefix(line, "created_at:") {
			continue
		}
		p := firewall.Published{Version: lineVersion(line)}
		if _, reqs, ok := strings.Cut(line, "|"); ok {
			for _, r := range strings.Split(reqs, ",") {
				if t, ok := strings.CutPrefix(r, "created_at:"); ok {
					if tt, err := time.Parse(time.RFC3339, t); err == nil {
						p.Time = tt
					}
				}
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// Scripts: gem extensions are not judged.
func (Adapter) Scripts() bool { return false }

// FactsDocument is the versions API's JSON, which has every version's created_at.
func (Adapter) FactsDocument(name string) (string, string) {
	return "api/v1/versions/" + name + ".json", "application/json"
}

// VersionFactsPath is the same document.
func (Adapter) VersionFactsPath(name, _ string) string { return "api/v1/versions/" + name + ".json" }
