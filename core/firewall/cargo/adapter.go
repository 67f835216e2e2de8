package cargo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/threatd/threatd/core/firewall"
)

// Adapter is the firewall's adapter for the sparse index protocol.
type Adapter struct{}

var (
	_ firewall.Adapter     = Adapter{}
	_ firewall.FileLocator = Adapter{}
	_ firewall.FactSource  = Adapter{}
)

const (
	typeJSON  = "application/json"
	typeText  = "text/plain; charset=utf-8"
	typeCrate = "application/x-tar"
)

// Registry is cargo (reports name the registry crates.io).
func (Adapter) Registry() string { return firewall.FirewallCargo }

// Defaults: crates.io's sparse index, whose config.json sends downloads
// to static.crates.io.
func (Adapter) Defaults() firewall.Upstream {
	return firewall.Upstream{URL: "https://index.crates.io", FileHosts: []string{"https://static.crates.io"}}
}

// Route reads a request (Parse) into what the firewall fetches.
func (Adapter) Route(r firewall.Request) (firewall.Route, bool, error) {
	req, ok, err := Parse(r.Path)
	if err != nil || !ok {
		return firewall.Route{}, ok, err
	}
	switch req.Kind {
	case Config:
		return firewall.Route{Kind: firewall.Metadata, Upstream: "config.json"}, true, nil
	case Index:
		return firewall.Route{Kind: firewall.Metadata, Name: req.Name, Upstream: IndexPath(req.Name)}, true, nil
	}
	// Refusals in plain text: cargo prints the start of a failed
	// download's body, where JSON would put the details first.
	return firewall.Route{Kind: firewall.Artifact, Name: req.Name, Version: req.Version, Index: "config.json", ContentType: typeCrate, Refusal: firewall.RefusePlain}, true, nil
}

// Rewrite rewrites config.json (downloads through base, auth-required) or
// an index file (a refused version's line marked yanked; every other line
// as the upstream wrote it).
func (Adapter) Rewrite(doc firewall.Document, judge firewall.Judge, base string) (firewall.Rendering, error) {
	if doc.Name == "" {
		var cfg map[string]json.RawMessage
		if err := json.Unmarshal(doc.Body, &cfg); err != nil {
			return firewall.Rendering{}, fmt.Errorf("config.json: %w", err)
		}
		if cfg == nil {
			return firewall.Rendering{}, fmt.Errorf("config.json is not an object")
		}
		dl, _ := json.Marshal(base + "/crates")
		cfg["dl"] = dl
		cfg["auth-required"] = json.RawMessage("true")
		// The web API (publishing, search) is not the firewall's.
		delete(cfg, "api")
		out, err := json.Marshal(cfg)
		return firewall.Rendering{Body: out, ContentType: typeJSON}, err
	}
	var out bytes.Buffer
	out.Grow(len(doc.Body))
	for line := range bytes.SplitSeq(doc.Body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var entry struct {
			Vers   string `json:"vers"`
			Yanked bool   `json:"yanked"`
		}
		if err := json.Unmarshal(line, &entry); err != nil {
			return firewall.Rendering{}, fmt.Errorf("index file of %s: %w", doc.Name, err)
		}
		if refused, _ := judge(entry.Vers); refused && !entry.Yanked {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(line, &fields); err != nil {
				return firewall.Rendering{}, err
			}
			fields["yanked"] = json.RawMessage("true")
			b, err := json.Marshal(fields)
			if err != nil {
				return firewall.Rendering{}, err
			}
			line = b
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	return firewall.Rendering{Body: out.Bytes(), ContentType: typeText}, nil
}

// Versions reads an index file's versions and their pubtime.
func (Adapter) Versions(doc firewall.Document) ([]firewall.Published, error) {
	var out []firewall.Published
	for line := range bytes.SplitSeq(doc.Body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var entry struct {
			Vers    string `json:"vers"`
			Pubtime string `json:"pubtime"`
		}
		if err := json.Unmarshal(line, &entry); err != nil {
			return nil, fmt.Errorf("index file of %s: %w", doc.Name, err)
		}
		p := firewall.Published{Version: entry.Vers}
		if entry.Pubtime != "" {
			if t, err := time.Parse(time.RFC3339, entry.Pubtime); err == nil {
				p.Time = t
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// Scripts: crates declare no install scripts the firewall judges.
func (Adapter) Scripts() bool { return false }

// FactsDocument is the crate's index file, which gives each version's pubtime.
func (Adapter) FactsDocument(name string) (string, string) { return IndexPath(name), "" }

// VersionFactsPath is the index file too.
func (Adapter) VersionFactsPath(name, _ string) string { return IndexPath(name) }

// Locate reads the upstream config.json's dl.
func (Adapter) Locate(doc firewall.Document) (firewall.Location, error) {
	var cfg struct {
		DL string `json:"dl"`
	}
	if err := json.Unmarshal(doc.Body, &cfg); err != nil {
		return firewall.Location{}, fmt.Errorf("config.json: %w", err)
	}
	if cfg.DL == "" {
		return firewall.Location{}, fmt.Errorf("config.json names no dl")
	}
	return firewall.Location{Template: cfg.DL}, nil
}

// FileURL is a version's .crate as the dl template says: with its
// markers replaced, or {dl}/{crate}/{version}/download without any.
func (Adapter) FileURL(loc firewall.Location, name, version string) (string, error) {
	t := loc.Template
	if !strings.Contains(t, "{") {
		return strings.TrimSuffix(t, "/") + "/" + name + "/" + version + "/download", nil
	}
	if strings.Contains(t, "{sha256-checksum}") {
		return "", fmt.Errorf("the upstream's dl names files by {sha256-checksum}, which the firewall does not read")
	}
	return strings.NewReplacer("{crate}", name, "{version}", version, "{prefix}", prefixOf(name), "{lowerprefix}", strings.ToLower(prefixOf(name))).Replace(t), nil
}

// prefixOf is the {prefix} of a name: its index directory, in its case.
func prefixOf(name string) string {
	switch len(name) {
	case 1:
		return "1"
	case 2:
		return "2"
	case 3:
		return "3/" + name[:1]
	}
	return name[:2] + "/" + name[2:4]
}
