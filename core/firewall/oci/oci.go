// Package oci is the registry firewall's reading of the OCI distribution
// protocol (docker, skopeo, podman, containerd pull through it): which
// requests ask for what, which tags and digests verified container
// reports block, and the upstream's bearer-token challenge. The HTTP side
// is core/api's; quarantine never applies to images.
package oci

import (
	"encoding/json"
	"net/url"
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
	// Upstream is the repository as the upstream names it, Client as the
	// client named it (Names; the proxy sets them).
	Upstream, Client string
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
		return Request{}, false, firewall.CannotJudge(firewall.FirewallOCI, what, v, "%s", why)
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

// Reported is what verified reports of one repository block: every tag
// and digest of it (a report of the repository alone), tags (each with
// the reports naming it) and digests.
type Reported struct {
	Every         []core.Threat
	Tags, Digests map[string][]core.Threat
}

// Any says whether anything is reported.
func (r Reported) Any() bool { return len(r.Every)+len(r.Tags)+len(r.Digests) > 0 }

// ReportedOf sorts the container reports of a repository by what they
// name: a report with a digest blocks that digest; one with a tag alone
// blocks the tag (and what it resolves to, which the caller resolves); one
// that names the repository alone (app, ghcr.io/org/app: no tag, no
// digest) blocks every tag and digest of it, as a package report without
// versions blocks every version. (Its duplicate key is the image's
// :latest; what it names is its resource as written.)
func ReportedOf(threats []core.Threat) Reported {
	r := Reported{Tags: map[string][]core.Threat{}, Digests: map[string][]core.Threat{}}
	for _, t := range threats {
		_, tg, dg := core.ContainerRepository(strings.TrimPrefix(t.CanonicalKey, "container:"))
		switch {
		case dg != "":
			r.Digests[dg] = append(r.Digests[dg], t)
		case !namesTag(t.ResourceIdentifier):
			r.Every = append(r.Every, t)
		case tg != "":
			r.Tags[tg] = append(r.Tags[tg], t)
		}
	}
	return r
}

// namesTag says whether an image reference as written names a tag or a
// digest (nginx:1.25, app@sha256:…), not the repository alone.
func namesTag(ref string) bool {
	if strings.Contains(ref, "@") {
		return true
	}
	last := ref[strings.LastIndexByte(ref, '/')+1:]
	return strings.Contains(last, ":")
}

// Names reads a repository name as a client asks the firewall for it
// (/v2/<name>/…). A registry host in front (docker.io/library/app, as
// mirrors that serve several registries are asked) is dropped: the
// firewall fronts one upstream, and reports match an image whatever host
// they name. match is the path reports are matched in (Docker Hub's
// library/ added); upstream the name to ask the upstream for, with
// library/ when the upstream, or the host named, is Docker Hub.
func Names(name, upstreamHost string) (match, upstream string) {
	path, host := name, ""
	if first, rest, ok := strings.Cut(name, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		host, path = first, rest
	}
	hub := func(h string) bool { return h == "docker.io" || h == "index.docker.io" || h == "registry-1.docker.io" }
	match, upstream = core.ImagePath(path), path
	if hub(upstreamHost) || hub(host) {
		upstream = core.ImagePath(path)
	}
	return match, upstream
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

// NextLink is the Link header of a tag list's next page as the firewall
// gives it: the upstream's next page (its n and last, nothing else of its
// URL: not its host, nor its name of the repository) below /v2/<client>/;
// "" when the upstream gives none it can read.
func NextLink(upstream, client string) string {
	start, end := strings.IndexByte(upstream, '<'), strings.IndexByte(upstream, '>')
	if start < 0 || end < start || !strings.Contains(strings.ToLower(upstream[end:]), `rel="next"`) {
		return ""
	}
	u, err := url.Parse(upstream[start+1 : end])
	if err != nil {
		return ""
	}
	q := url.Values{}
	for _, k := range []string{"n", "last"} {
		if v := u.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	return "</v2/" + client + "/tags/list?" + q.Encode() + `>; rel="next"`
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
