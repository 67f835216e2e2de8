// Package oci is the registry firewall's reading of the OCI distribution
// protocol (docker, skopeo, podman, containerd pull through it): which
// requests ask for what, which tags and digests verified container
// reports block, and the upstream's bearer-token challenge. The HTTP side
// is core/api's; quarantine never applies to images.
package oci

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// Kind is what a request below /v2/ asks for.
type Kind int

// The kinds of requests.
const (
	// Base is /v2/ itself: the registry's version check.
	Base Kind = iota + 1
	// Manifest is /v2/<name>/manifests/<tag or digest>.
	Manifest
	// Blob is /v2/<name>/blobs/<digest>.
	Blob
	// Tags is /v2/<name>/tags/list.
	Tags
)

// Request is a distribution request, as judged.
type Request struct {
	Kind Kind
	// Name is the repository path ("library/nginx"); Reference a tag or
	// a digest.
	Name, Reference string
}

// IsDigest says whether the reference is a digest.
func (r Request) IsDigest() bool { return strings.Contains(r.Reference, ":") }

// The distribution spec's grammar.
var (
	component = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$`)
	tag       = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digest    = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$`)
)

// Parse reads the escaped path below /v2/. A path of an unknown shape is
// (Request{}, false, nil); a name or reference the firewall cannot judge
// is a *firewall.Unjudgeable.
func Parse(escaped string) (Request, bool, error) {
	if escaped == "" {
		return Request{Kind: Base}, true, nil
	}
	bad := func(what, v, why string) (Request, bool, error) {
		return Request{}, false, firewall.CannotJudge(core.FirewallOCI, what, v, "%s", why)
	}
	var name, ref string
	var kind Kind
	switch {
	case strings.HasSuffix(escaped, "/tags/list"):
		name, kind = strings.TrimSuffix(escaped, "/tags/list"), Tags
	default:
		for _, k := range []struct {
			sep  string
			kind Kind
		}{{"/manifests/", Manifest}, {"/blobs/", Blob}} {
			if i := strings.LastIndex(escaped, k.sep); i > 0 {
				name, ref, kind = escaped[:i], escaped[i+len(k.sep):], k.kind
				break
			}
		}
	}
	if kind == 0 {
		return Request{}, false, nil
	}
	if len(name) > 255 {
		return bad("repository name", name, "a repository name is at most 255 characters")
	}
	for _, c := range strings.Split(name, "/") {
		if !component.MatchString(c) {
			return bad("repository name", name, "a repository name is lower-case components of letters, digits and separators, joined by /")
		}
	}
	switch {
	case kind == Tags:
	case kind == Blob && !digest.MatchString(ref):
		return bad("digest", ref, "a blob is named by its digest, algorithm:hex")
	case kind == Manifest && !tag.MatchString(ref) && !digest.MatchString(ref):
		return bad("reference", ref, "a manifest is named by a tag or a digest")
	}
	return Request{Kind: kind, Name: name, Reference: ref}, true, nil
}

// Reported is what verified reports of one repository block: tags (each
// with the reports naming it) and digests.
type Reported struct {
	Tags, Digests map[string][]core.Threat
}

// Any says whether anything is reported.
func (r Reported) Any() bool { return len(r.Tags)+len(r.Digests) > 0 }

// ReportedOf sorts the container reports of a repository by what they
// name: a report with a digest blocks that digest; one with a tag alone
// blocks the tag (and what it resolves to, which the caller resolves).
func ReportedOf(threats []core.Threat) Reported {
	r := Reported{Tags: map[string][]core.Threat{}, Digests: map[string][]core.Threat{}}
	for _, t := range threats {
		_, tg, dg := core.ContainerRepository(strings.TrimPrefix(t.CanonicalKey, "container:"))
		switch {
		case dg != "":
			r.Digests[dg] = append(r.Digests[dg], t)
		case tg != "":
			r.Tags[tg] = append(r.Tags[tg], t)
		}
	}
	return r
}

// Children are the digests of the manifests an image index (or a Docker
// manifest list) names: each platform's image of a multi-platform tag.
func Children(manifest []byte) []string {
	var idx struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	if json.Unmarshal(manifest, &idx) != nil {
		return nil
	}
	var out []string
	for _, m := range idx.Manifests {
		if digest.MatchString(m.Digest) {
			out = append(out, m.Digest)
		}
	}
	return out
}

// Challenge is an upstream's bearer-token challenge.
type Challenge struct {
	Realm, Service string
}

// ParseChallenge reads a WWW-Authenticate header of the Bearer scheme.
func ParseChallenge(h string) (Challenge, bool) {
	scheme, rest, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Challenge{}, false
	}
	var c Challenge
	for rest != "" {
		rest = strings.TrimLeft(rest, " ,")
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		if strings.HasPrefix(v, `"`) {
			end := strings.IndexByte(v[1:], '"')
			if end < 0 {
				return Challenge{}, false
			}
			v, rest = v[1:end+1], v[end+2:]
		} else if i := strings.IndexByte(v, ','); i >= 0 {
			v, rest = v[:i], v[i:]
		} else {
			rest = ""
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "realm":
			c.Realm = v
		case "service":
			c.Service = v
		}
	}
	return c, c.Realm != ""
}

// ErrorBody is the distribution spec's error shape.
func ErrorBody(code, message string, detail any) []byte {
	e := map[string]any{"code": code, "message": message}
	if detail != nil {
		e["detail"] = detail
	}
	b, _ := json.Marshal(map[string]any{"errors": []any{e}})
	return b
}
