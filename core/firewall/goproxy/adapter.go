package goproxy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// Adapter is the firewall's adapter for the Go module proxy protocol:
// @v/list and @latest without refused versions, a refused version's .info,
// .mod and .zip refused, the checksum database proxy passed through.
// Refusals are plain text: the go command prints a refusal's body only
// when it is.
type Adapter struct{}

var (
	_ firewall.Adapter          = Adapter{}
	_ firewall.VersionDocuments = Adapter{}
	_ firewall.AuthorTimes      = Adapter{}
	_ firewall.Ordered          = Adapter{}
)

const (
	typeJSON = "application/json"
	typeText = "text/plain; charset=utf-8"
)

// Registry is go.
func (Adapter) Registry() string { return core.RegistryGo }

// Defaults: the Go module mirror.
func (Adapter) Defaults() firewall.Upstream {
	return firewall.Upstream{URL: "https://proxy.golang.org"}
}

// Route reads a request (Parse) into what the firewall fetches.
func (Adapter) Route(r firewall.Request) (firewall.Route, bool, error) {
	req, ok, err := Parse(r.Path)
	plain := firewall.Route{Refusal: firewall.RefusePlain}
	if err != nil || !ok {
		return plain, ok, err
	}
	rt := firewall.Route{Name: req.Module, Upstream: req.UpstreamPath(), Refusal: firewall.RefusePlain}
	switch req.Kind {
	case SumDB:
		rt.Kind, rt.ContentType = firewall.PassThrough, typeText
	case List:
		rt.Kind, rt.ContentType, rt.RefuseEvery = firewall.Metadata, typeText, true
	case Latest:
		rt.Kind, rt.Fallback = firewall.VersionDocument, ModulePath(req.Module)+"/@v/list"
	default:
		rt.Kind, rt.Version = firewall.Artifact, req.Version
		switch req.Ext {
		case ".info":
			rt.ContentType = typeJSON
		case ".mod":
			rt.ContentType = typeText
		default:
			rt.ContentType = "application/octet-stream"
		}
	}
	return rt, true, nil
}

// Rewrite is a version list without the refused versions.
func (Adapter) Rewrite(doc firewall.Document, judge firewall.Judge, _ string) (firewall.Rendering, error) {
	var b strings.Builder
	for line := range strings.SplitSeq(string(doc.Body), "\n") {
		v := strings.TrimSpace(line)
		if v == "" {
			continue
		}
		if refused, _ := judge(v); refused {
			continue
		}
		b.WriteString(v)
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		b.WriteByte('\n')
	}
	return firewall.Rendering{Body: []byte(b.String()), ContentType: typeText}, nil
}

// Versions reads a version list (which carries no times: a version's
// .info does).
func (Adapter) Versions(doc firewall.Document) ([]firewall.Published, error) {
	if b := bytes.TrimSpace(doc.Body); len(b) > 0 && b[0] == '{' {
		// A version's .info: its Time is when the origin published it.
		var info struct {
			Version string
			Time    time.Time
		}
		if err := json.Unmarshal(b, &info); err != nil {
			return nil, err
		}
		return []firewall.Published{{Version: info.Version, Time: info.Time}}, nil
	}
	var out []firewall.Published
	for line := range strings.SplitSeq(string(doc.Body), "\n") {
		if v := strings.TrimSpace(line); v != "" {
			out = append(out, firewall.Published{Version: v})
		}
	}
	return out, nil
}

// Scripts says whether Versions reads install scripts.
func (Adapter) Scripts() bool { return false }

// FactsDocument is none: each version has its .info.
func (Adapter) FactsDocument(string) (string, string) { return "", "" }

// VersionFactsPath is a version's .info.
func (Adapter) VersionFactsPath(mod, version string) string { return FilePath(mod, version, ".info") }

// VersionOf reads an .info document's (@latest's) Version.
func (Adapter) VersionOf(doc firewall.Document) (string, error) {
	var info struct{ Version string }
	if err := json.Unmarshal(doc.Body, &info); err != nil {
		return "", err
	}
	return info.Version, nil
}

// RewriteVersion leaves an .info document as it is: it has no links.
func (Adapter) RewriteVersion(doc firewall.Document, _, _ string) ([]byte, error) {
	return doc.Body, nil
}

// Highest is the highest release among versions in semver order (the
// highest pre-release when there is no release; "" when none is semver).
func (Adapter) Highest(versions []string) string {
	var best, bestPre string
	for _, v := range versions {
		switch {
		case !semver.IsValid(v):
		case semver.Prerelease(v) == "":
			if best == "" || semver.Compare(v, best) > 0 {
				best = v
			}
		case bestPre == "" || semver.Compare(v, bestPre) > 0:
			bestPre = v
		}
	}
	if best != "" {
		return best
	}
	return bestPre
}

// Listed: a Go version's .info Time is its commit's, which its author
// sets; a version other than a pseudo-version (whose time is in its name)
// appears in @v/list once the proxy has it (firewall.AuthorTimes).
func (Adapter) Listed(version string) bool { return !module.IsPseudoVersion(version) }

// Order is versions oldest first by semver (@v/list is in no order); the
// ones that are not semver first.
func (Adapter) Order(versions []string) []string {
	out := slices.Clone(versions)
	slices.SortStableFunc(out, func(a, b string) int {
		switch va, vb := semver.IsValid(a), semver.IsValid(b); {
		case va && vb:
			return semver.Compare(a, b)
		case va:
			return 1
		case vb:
			return -1
		}
		return 0
	})
	return out
}

// VersionPath is the upstream path of a version's .info.
func (Adapter) VersionPath(mod, version string) string { return FilePath(mod, version, ".info") }
