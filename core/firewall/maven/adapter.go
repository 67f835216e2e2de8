package maven

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// Adapter is the firewall's adapter for Maven repositories.
type Adapter struct{}

var (
	_ firewall.Adapter    = Adapter{}
	_ firewall.FactSource = Adapter{}
	_ firewall.Derived    = Adapter{}
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

// element is where an element of interest is in a document: from its
// start tag (and the white space before it) to the end of its end tag,
// and its text as XML reads it (entities and CDATA decoded).
type element struct {
	name       string // version, latest or release
	from, to   int64
	text       string
	inVersions bool
}

// elements reads the document with an XML decoder and gives the places of
// metadata/versioning's <latest>, <release> and versions/<version>: what
// Rewrite changes is found as Maven reads it, never by a pattern over the
// text (a version written with an entity or as CDATA is still that
// version). An element's place starts at the white space before it.
func elements(body []byte) ([]element, error) {
	dec := xml.NewDecoder(bytes.NewReader(body))
	var out []element
	var path []string
	var cur *element
	var text strings.Builder
	// Where the previous token started, and whether it was white space.
	prevStart, prevSpace := int64(0), false
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		space := false
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name.Local)
			if len(path) > 64 {
				return nil, fmt.Errorf("nested more than 64 deep")
			}
			switch strings.Join(path, "/") {
			case "metadata/versioning/latest", "metadata/versioning/release", "metadata/versioning/versions/version":
				from := start
				if prevSpace {
					from = prevStart
				}
				cur = &element{name: t.Name.Local, from: from, inVersions: t.Name.Local == "version"}
				text.Reset()
			}
		case xml.CharData:
			space = len(bytes.TrimSpace(t)) == 0
			if cur != nil {
				text.Write(t)
			}
		case xml.EndElement:
			if cur != nil && len(path) == 3+btoi(cur.inVersions) && path[len(path)-1] == cur.name {
				cur.to = dec.InputOffset()
				cur.text = strings.TrimSpace(text.String())
				out = append(out, *cur)
				cur = nil
			}
			path = path[:len(path)-1]
		}
		prevStart, prevSpace = start, space
	}
	return out, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Rewrite drops refused versions from <versions> and recomputes <latest>
// and <release> (the last remaining version in the document's order,
// which is the order they were deployed in; <release> skips snapshots);
// everything else is as the upstream wrote it, byte for byte. The XML is
// read as Maven reads it: a version written with an entity (1.0.&#49;) or
// as CDATA is judged as the version it is.
func (Adapter) Rewrite(doc firewall.Document, judge firewall.Judge, _ string) (firewall.Rendering, error) {
	if _, err := parse(doc); err != nil {
		return firewall.Rendering{}, err
	}
	els, err := elements(doc.Body)
	if err != nil {
		return firewall.Rendering{}, fmt.Errorf("maven-metadata.xml of %s: %w", doc.Name, err)
	}
	var kept []string
	refused := false
	drop := map[int]bool{}
	for i, e := range els {
		switch {
		case e.inVersions:
			if r, _ := judge(e.text); r {
				refused, drop[i] = true, true
			} else {
				kept = append(kept, e.text)
			}
		case e.name == "latest" || e.name == "release":
			// A refused version named only there (a document without it
			// in <versions>) is recomputed away too.
			if r, _ := judge(e.text); r {
				refused = true
			}
		}
	}
	if !refused {
		return firewall.Rendering{Body: doc.Body, ContentType: typeXML}, nil
	}
	latest, release := "", ""
	for _, v := range kept {
		latest = v
		if !strings.HasSuffix(v, "-SNAPSHOT") {
			release = v
		}
	}
	var out bytes.Buffer
	out.Grow(len(doc.Body))
	at := int64(0)
	for i, e := range els {
		switch {
		case drop[i]:
			out.Write(doc.Body[at:e.from])
			at = e.to
		case e.name == "latest" || e.name == "release":
			v := latest
			if e.name == "release" {
				v = release
			}
			out.Write(doc.Body[at:e.from])
			// Its white space as written, then the element anew.
			lead := doc.Body[e.from:e.to]
			lead = lead[:len(lead)-len(bytes.TrimLeft(lead, " \t\r\n"))]
			out.Write(lead)
			out.WriteString("<" + e.name + ">")
			_ = xml.EscapeText(&out, []byte(v))
			out.WriteString("</" + e.name + ">")
			at = e.to
		}
	}
	out.Write(doc.Body[at:])
	return firewall.Rendering{Body: out.Bytes(), ContentType: typeXML}, nil
}

// Derive is a checksum file of the document served, as Maven writes them
// (its hex digest).
func (Adapter) Derive(main []byte, variant string) (firewall.Rendering, error) {
	var h hash.Hash
	switch variant {
	case ".md5":
		h = md5.New()
	case ".sha1":
		h = sha1.New()
	case ".sha256":
		h = sha256.New()
	case ".sha512":
		h = sha512.New()
	default:
		return firewall.Rendering{}, fmt.Errorf("no checksum %q", variant)
	}
	h.Write(main)
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
