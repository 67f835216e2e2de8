package maven

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"hash"
	"regexp"
	"strings"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// Adapter is the firewall's adapter for Maven repositories.
type Adapter struct{}

var (
	_ firewall.Adapter    = Adapter{}
	_ firewall.FactSource = Adapter{}
)

const (
	typeXML  = "text/xml"
	typeText = "text/plain; charset=utf-8"
)

// Registry is maven.
func (Adapter) Registry() string { return core.RegistryMaven }

// Defaults: Maven Central.
func (Adapter) Defaults() firewall.Upstream {
	return firewall.Upstream{URL: "https://repo1.maven.org/maven2"}
}

// Route reads a request (Parse). Refusals carry their text in the reason
// phrase too: Maven prints a failed download's status line, not its body.
func (Adapter) Route(r firewall.Request) (firewall.Route, bool, error) {
	req, ok, err := Parse(r.Path)
	if err != nil || !ok {
		return firewall.Route{Refusal: firewall.RefuseReason}, ok, err
	}
	if req.Kind == Metadata {
		return firewall.Route{Kind: firewall.Metadata, Name: req.Name(), Upstream: req.Path, Variant: req.Checksum,
			RefuseEvery: true, Refusal: firewall.RefuseReason}, true, nil
	}
	return firewall.Route{Kind: firewall.Artifact, Name: req.Name(), Version: req.Version, Upstream: req.Path,
		ContentType: contentType(req.Path), Refusal: firewall.RefuseReason}, true, nil
}

// contentType is what a repository file is served as.
func contentType(p string) string {
	if _, ext := splitChecksum(p); ext != "" {
		return typeText
	}
	switch {
	case strings.HasSuffix(p, ".pom"), strings.HasSuffix(p, ".xml"):
		return typeXML
	case strings.HasSuffix(p, ".jar"):
		return "application/java-archive"
	}
	return "application/octet-stream"
}

// metadata is what the firewall reads of a maven-metadata.xml.
type metadata struct {
	XMLName    xml.Name `xml:"metadata"`
	Versioning struct {
		Latest   string   `xml:"latest"`
		Release  string   `xml:"release"`
		Versions []string `xml:"versions>version"`
	} `xml:"versioning"`
}

func parse(doc firewall.Document) (metadata, error) {
	var m metadata
	if err := xml.Unmarshal(doc.Body, &m); err != nil {
		return m, fmt.Errorf("maven-metadata.xml of %s: %w", doc.Name, err)
	}
	return m, nil
}

var (
	versionsBlock = regexp.MustCompile(`(?s)<versions>.*?</versions>`)
	versionElem   = regexp.MustCompile(`\s*<version>\s*([^<]*?)\s*</version>`)
	latestElem    = regexp.MustCompile(`<latest>[^<]*</latest>`)
	releaseElem   = regexp.MustCompile(`<release>[^<]*</release>`)
)

// Rewrite drops refused versions from <versions> and recomputes <latest>
// and <release> (the last remaining version in the document's order,
// which is the order they were deployed in; <release> skips snapshots);
// everything else is as the upstream wrote it. A checksum variant is the
// checksum of that document, as Maven writes checksum files.
func (Adapter) Rewrite(doc firewall.Document, judge firewall.Judge, _ string) (firewall.Rendering, error) {
	m, err := parse(doc)
	if err != nil {
		return firewall.Rendering{}, err
	}
	out := doc.Body
	var kept []string
	refused := false
	for _, v := range m.Versioning.Versions {
		if r, _ := judge(strings.TrimSpace(v)); r {
			refused = true
		} else {
			kept = append(kept, strings.TrimSpace(v))
		}
	}
	if refused {
		out = versionsBlock.ReplaceAllFunc(out, func(block []byte) []byte {
			return versionElem.ReplaceAllFunc(block, func(e []byte) []byte {
				v := string(versionElem.FindSubmatch(e)[1])
				if r, _ := judge(v); r {
					return nil
				}
				return e
			})
		})
		latest, release := "", ""
		for _, v := range kept {
			latest = v
			if !strings.HasSuffix(v, "-SNAPSHOT") {
				release = v
			}
		}
		out = latestElem.ReplaceAll(out, []byte("<latest>"+latest+"</latest>"))
		out = releaseElem.ReplaceAll(out, []byte("<release>"+release+"</release>"))
	}
	if doc.Variant == "" {
		return firewall.Rendering{Body: out, ContentType: typeXML}, nil
	}
	var h hash.Hash
	switch doc.Variant {
	case ".md5":
		h = md5.New()
	case ".sha1":
		h = sha1.New()
	case ".sha256":
		h = sha256.New()
	case ".sha512":
		h = sha512.New()
	default:
		return firewall.Rendering{}, fmt.Errorf("no checksum %q", doc.Variant)
	}
	h.Write(out)
	return firewall.Rendering{Body: []byte(hex.EncodeToString(h.Sum(nil))), ContentType: typeText}, nil
}

// Versions reads the versions a maven-metadata.xml lists (no times), or
// a .pom's publish time, its Last-Modified.
func (Adapter) Versions(doc firewall.Document) ([]firewall.Published, error) {
	if strings.HasSuffix(doc.URL, ".pom") {
		return []firewall.Published{{Time: doc.LastModified}}, nil
	}
	m, err := parse(doc)
	if err != nil {
		return nil, err
	}
	out := make([]firewall.Published, 0, len(m.Versioning.Versions))
	for _, v := range m.Versioning.Versions {
		out = append(out, firewall.Published{Version: strings.TrimSpace(v)})
	}
	return out, nil
}

// Scripts: Maven artifacts declare no install scripts the firewall judges.
func (Adapter) Scripts() bool { return false }

// FactsDocument is none: each version's .pom says when it was published.
func (Adapter) FactsDocument(string) (string, string) { return "", "" }

// VersionFactsPath is a version's .pom.
func (Adapter) VersionFactsPath(name, version string) string { return PomPath(name, version) }
