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
	_ firewall.Adapter     = Adapter{}
	_ firewall.FactSource  = Adapter{}
	_ firewall.Listing     = Adapter{}
	_ firewall.VersionKeys = Adapter{}
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
	case Specs:
		// Passed through as the upstream writes it: gem sources --add
		// accepts the source, gem search and gem fetch see every
		// version, and a blocked version's .gem is refused when it is
		// fetched (gem install resolves through the compact index,
		// which leaves it out).
		return firewall.Route{Kind: firewall.PassThrough, Upstream: req.Path, ContentType: "application/octet-stream"}, true, nil
	case Info:
		return firewall.Route{Kind: firewall.Metadata, Name: req.Name, Upstream: req.Path}, true, nil
	}
	file := func(r Reading) firewall.Route {
		return firewall.Route{Kind: firewall.Artifact, Name: r.Name, Version: r.Version, Upstream: req.Path,
			ContentType: "application/octet-stream", Refusal: firewall.RefuseReason, Listed: "info/" + r.Name}
	}
	rt := file(Reading{Name: req.Name, Version: req.Version})
	for _, r := range req.Readings {
		rt.Readings = append(rt.Readings, file(r))
	}
	return rt, true, nil
}

// lineKey is the version of an /info line or a /versions entry as the
// index lists it, with its platform (1.0.0-java) and without a yank mark:
// what the quarantine judges (a platform's gem has its own publish time);
// ReportVersion is what reports name.
func lineKey(entry string) string {
	v, _, _ := strings.Cut(strings.TrimPrefix(entry, "-"), " ")
	return v
}

// ReportVersion is the version reports name of a listed version: without
// its platform.
func (Adapter) ReportVersion(key string) string { return ReportVersion(key) }

// Rewrite drops the lines of refused versions from an /info file.
func (Adapter) Rewrite(doc firewall.Document, judge firewall.Judge, _ string) (firewall.Rendering, error) {
	var out bytes.Buffer
	out.Grow(len(doc.Body))
	for line := range bytes.Lines(doc.Body) {
		s := strings.TrimRight(string(line), "\n")
		if s != "---" && s != "" && !strings.HasPrefix(s, "created_at:") {
			if r, _ := judge(lineKey(s)); r {
				continue
			}
		}
		out.Write(line)
	}
	return firewall.Rendering{Body: out.Bytes(), ContentType: typeText}, nil
}

// RecentLines is how many of /versions' last lines name the gems whose
// versions the quarantine judges there: /versions grows by a line for
// every push, so they are the gems pushed most recently (about a day of
// rubygems.org's pushes). Judging every gem would mean reading every gem's
// publish times (its versions API answers about 10 requests a second); a
// gem named only earlier is judged by its reports and waivers alone
// (docs/firewall.md).
const RecentLines = 2000

// RewriteListing rewrites /versions: a gem with a refused version loses
// it from every line, and every line of it carries the MD5 of its /info as
// the firewall serves it (info: Bundler checks the /info it downloads
// against the gem's last line); a gem left with no version loses its
// lines. judges gives each gem's Judge (recent: the gem is named in the
// last RecentLines lines, so the quarantine applies too); nil when
// nothing of it can be refused.
func (Adapter) RewriteListing(doc firewall.Document, judges func(names []string, recent map[string]bool) (map[string]firewall.Judge, error), info func(name string) ([]byte, error)) (firewall.Rendering, error) {
	type entry struct {
		line   []byte
		fields []string
	}
	var head []byte
	var lines []entry
	header := true
	for line := range bytes.Lines(doc.Body) {
		if header {
			head = append(head, line...)
			header = string(bytes.TrimSpace(line)) != "---"
			continue
		}
		lines = append(lines, entry{line: line, fields: strings.Fields(string(line))})
	}
	recent := map[string]bool{}
	for _, e := range lines[max(0, len(lines)-RecentLines):] {
		if len(e.fields) == 3 {
			recent[e.fields[0]] = true
		}
	}
	// First, which entries of which gems are refused.
	type gem struct {
		judge   firewall.Judge
		refused map[string]bool
	}
	gems := map[string]*gem{}
	var names []string
	for _, e := range lines {
		if len(e.fields) == 3 && gems[e.fields[0]] == nil {
			gems[e.fields[0]] = &gem{}
			names = append(names, e.fields[0])
		}
	}
	js, err := judges(names, recent)
	if err != nil {
		return firewall.Rendering{}, err
	}
	for _, e := range lines {
		if len(e.fields) != 3 {
			continue
		}
		g := gems[e.fields[0]]
		if g.judge = js[e.fields[0]]; g.judge == nil {
			continue
		}
		for _, v := range strings.Split(e.fields[1], ",") {
			if r, _ := g.judge(lineKey(v)); r {
				if g.refused == nil {
					g.refused = map[string]bool{}
				}
				g.refused[v] = true
			}
		}
	}
	var out bytes.Buffer
	out.Grow(len(doc.Body))
	out.Write(head)
	sums := map[string]string{}
	for _, e := range lines {
		if len(e.fields) != 3 || gems[e.fields[0]].refused == nil {
			out.Write(e.line)
			continue
		}
		name := e.fields[0]
		var kept []string
		for _, v := range strings.Split(e.fields[1], ",") {
			if !gems[name].refused[v] {
				kept = append(kept, v)
			}
		}
		if len(kept) == 0 {
			continue
		}
		sum, ok := sums[name]
		if !ok {
			b, err := info(name)
			if err != nil {
				return firewall.Rendering{}, err
			}
			h := md5.Sum(b)
			sum = hex.EncodeToString(h[:])
			sums[name] = sum
		}
		fmt.Fprintf(&out, "%s %s %s\n", name, strings.Join(kept, ","), sum)
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
			Platform  string `json:"platform"`
			CreatedAt string `json:"created_at"`
		}
		if err := json.Unmarshal(doc.Body, &vs); err != nil {
			return nil, fmt.Errorf("versions of %s: %w", doc.Name, err)
		}
		out := make([]firewall.Published, 0, len(vs))
		for _, v := range vs {
			// Each platform's gem of a version is pushed on its own, and
			// has its own time: listed as the index lists it.
			p := firewall.Published{Version: v.Number}
			if v.Platform != "" && v.Platform != "ruby" {
				p.Version += "-" + v.Platform
			}
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
		p := firewall.Published{Version: lineKey(line)}
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
