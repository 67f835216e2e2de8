package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/api/upstream"
	"github.com/threatd/threatd/core/firewall"
	npmfw "github.com/threatd/threatd/core/firewall/npm"
)

// npmAccept is the Accept the firewall asks npm upstreams with: the
// abbreviated install document when the client asked for it (npm does),
// else the full document.
func npmAccept(client string) string {
	if strings.Contains(client, "application/vnd.npm.install-v1+json") {
		return "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"
	}
	return "application/json"
}

// npm serves {base}/firewall/npm/: package documents, version documents
// and tarballs; other registry endpoints (/-/ping, search) pass through
// once their path is checked. Every upstream URL is built from the name
// and version judged (npmfw.Parse), never from the client's bytes.
func (p *proxy) npm(c *echo.Context) error {
	tail := p.tail(c, "npm")
	r, ok, err := npmfw.Parse(tail)
	if err != nil {
		return cannotJudge(c, err, false)
	}
	if !ok {
		return notFound("%q is not an npm registry path", tail)
	}
	if r.Kind == npmfw.Endpoint {
		u := strings.TrimSuffix(p.opts.Upstreams[core.RegistryNPM].URL, "/") + "/" + r.Path
		if q := c.Request().URL.RawQuery; q != "" {
			u += "?" + q
		}
		return p.forward(c, core.RegistryNPM, u, c.Request().Header.Get("Accept"), "")
	}
	v, err := p.lookup(c, core.RegistryNPM, r.Name)
	if err != nil {
		return cannotJudge(c, err, false)
	}
	up, err := p.upstream(core.RegistryNPM, v)
	if err != nil {
		return err
	}
	docURL := up + "/" + npmfw.DocumentPath(r.Name)
	switch r.Kind {
	case npmfw.Document:
		if every := v.BlocksEvery(); len(every) > 0 {
			return p.refuse(c, &firewall.Blocked{Registry: core.RegistryNPM, Name: r.Name, Threats: every}, false)
		}
		return p.document(c, core.RegistryNPM, docURL, npmAccept(c.Request().Header.Get("Accept")), v,
			func(body []byte, _, base string) (rendering, error) {
				out, err := npmfw.Rewrite(body, func(ver string) bool { return v.Check(ver) != nil }, v.Name, base)
				return rendering{out, typeJSON}, err
			})
	case npmfw.Tarball:
		return p.npmTarball(c, v, docURL, r.File)
	}
	return p.npmVersionDocument(c, v, up+"/"+npmfw.VersionPath(r.Name, r.Spec), r.Spec)
}

// npmVersionDocument answers /{name}/{version or tag}: refused when the
// version it names (a tag such as latest resolved by the upstream) is
// blocked, else with its tarball pointed at the firewall.
func (p *proxy) npmVersionDocument(c *echo.Context, v firewall.Verdict, versionURL, spec string) error {
	if b := v.Check(spec); b != nil {
		return p.refuse(c, b, false)
	}
	body, res, err := p.fetchDocument(c.Request().Context(), core.RegistryNPM, versionURL, typeJSON)
	if err != nil {
		return err
	}
	if res != nil {
		return passThrough(c, res, "")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return p.unreadable(core.RegistryNPM, err)
	}
	version := stringField(m, "version")
	if version == "" && !v.Clean() {
		return p.unreadable(core.RegistryNPM, fmt.Errorf("the version document of %s@%s names no version", v.Name, spec))
	}
	if b := v.Check(version); b != nil {
		return p.refuse(c, b, false)
	}
	if err := rewriteTarballField(m, v.Name, p.base(c, core.RegistryNPM)); err != nil {
		return p.unreadable(core.RegistryNPM, err)
	}
	return c.JSON(http.StatusOK, m)
}

// npmTarball answers a tarball: the version is the one whose dist.tarball
// the package document names file, and the file comes from that URL (on
// one of the registry's origins, or refused).
func (p *proxy) npmTarball(c *echo.Context, v firewall.Verdict, docURL, file string) error {
	table, res, err := p.npmTarballs(c.Request().Context(), docURL)
	if err != nil {
		return err
	}
	if res != nil {
		return passThrough(c, res, "")
	}
	entry, ok := table[file]
	if !ok {
		return notFound("npm package %s has no tarball %s", v.Name, file)
	}
	// A document that gives one file name to several versions: the file
	// is refused when any of them is blocked.
	for _, ver := range entry.versions {
		if b := v.Check(ver); b != nil {
			return p.refuse(c, b, false)
		}
	}
	return p.stream(c, core.RegistryNPM, entry.url, typeFile)
}

// npmFile is a tarball a package document lists: the versions that name
// it (one, unless the document is odd) and its upstream URL.
type npmFile struct {
	versions []string
	url      string
}

// npmTarballs is the table of a package's tarballs by file name, read
// from its document and kept while the document is.
func (p *proxy) npmTarballs(ctx context.Context, docURL string) (map[string]npmFile, *upstream.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.UpstreamTimeout)
	defer cancel()
	res, err := p.fetch(ctx, core.RegistryNPM, docURL, npmAccept("application/vnd.npm.install-v1+json"))
	if err != nil {
		return nil, nil, err
	}
	if res.Status != http.StatusOK {
		return nil, res, nil
	}
	key := "npm-tarballs\x00" + docURL + "\x00" + res.Version
	if t, ok := p.parsed.Get(key); ok {
		_ = res.Body.Close()
		return t.(map[string]npmFile), nil, nil
	}
	var table map[string]npmFile
	err = p.renders.withBudget(ctx, contentLength(res), func() error {
		body, err := p.readDocument(core.RegistryNPM, res)
		if err != nil {
			return err
		}
		var doc struct {
			Versions map[string]struct {
				Dist struct {
					Tarball string `json:"tarball"`
				} `json:"dist"`
			} `json:"versions"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return p.unreadable(core.RegistryNPM, err)
		}
		table = make(map[string]npmFile, len(doc.Versions))
		for _, ver := range slices.Sorted(maps.Keys(doc.Versions)) {
			if u := doc.Versions[ver].Dist.Tarball; u != "" {
				f := table[path.Base(u)]
				if f.url == "" {
					f.url = u
				}
				f.versions = append(f.versions, ver)
				table[path.Base(u)] = f
			}
		}
		return nil
	})
	if err != nil {
		_ = res.Body.Close()
		return nil, nil, err
	}
	if res.Kept() {
		size := int64(len(key))
		for f, e := range table {
			size += int64(len(f)+len(e.url)) + 16*int64(len(e.versions)) + 64
		}
		remember(p.parsed, parsedBytes, key, any(table), size)
	}
	return table, nil, nil
}

// rewriteTarballField points a version document's dist.tarball at the firewall.
func rewriteTarballField(m map[string]json.RawMessage, name, base string) error {
	raw, ok := m["dist"]
	if !ok {
		return nil
	}
	var dist map[string]json.RawMessage
	if err := json.Unmarshal(raw, &dist); err != nil {
		return fmt.Errorf("dist: %w", err)
	}
	tarball := stringField(dist, "tarball")
	if tarball == "" {
		return nil
	}
	dist["tarball"], _ = json.Marshal(base + "/" + npmfw.Escape(name) + "/-/" + path.Base(tarball))
	b, err := json.Marshal(dist)
	m["dist"] = b
	return err
}

// stringField is a string member of a JSON object ("" when absent or not a string).
func stringField(m map[string]json.RawMessage, k string) string {
	var s string
	if raw, ok := m[k]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// npmAdvisory is one entry of npm's bulk-advisory answer.
type npmAdvisory struct {
	ID                 uint64         `json:"id"`
	URL                string         `json:"url"`
	Title              string         `json:"title"`
	Severity           string         `json:"severity"`
	VulnerableVersions string         `json:"vulnerable_versions"`
	CWE                []string       `json:"cwe"`
	CVSS               map[string]any `json:"cvss"`
}

// npmSeverity maps a report's severity to npm's scale.
func npmSeverity(s core.Severity) string {
	switch s {
	case core.SeverityMedium:
		return "moderate"
	case core.SeverityCritical, core.SeverityHigh, core.SeverityLow:
		return string(s)
	}
	return "critical"
}

// The npm audit's costs: one firewall request per auditPerRequest package
// versions asked about, and, charged before the body is parsed, one per
// auditBytesPerRequest bytes of it (a lockfile of 1,000 packages is about
// 40 KB of audit request).
const (
	auditPerRequest      = 1000
	auditBytesPerRequest = 64 << 10
	auditHint            = " (an npm audit counts one request per 1,000 package versions)"
)

// npmAudit answers npm's bulk-advisory request ({"name": ["1.0.0", …]},
// often gzip-compressed) with one advisory per blocked version, so that
// `npm audit` lists malicious packages.
func (p *proxy) npmAudit(c *echo.Context) error {
	var r io.Reader = c.Request().Body
	if strings.EqualFold(c.Request().Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return &Error{Status: http.StatusBadRequest, Message: "The request body is not valid gzip: " + err.Error()}
		}
		defer zr.Close()
		r = zr
	}
	body, err := io.ReadAll(io.LimitReader(r, maxAuditBody+1))
	if err != nil {
		return &Error{Status: http.StatusBadRequest, Message: "The request body could not be read: " + err.Error()}
	}
	if len(body) > maxAuditBody {
		return &Error{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("The audit request is larger than %d MiB once decompressed", maxAuditBody>>20)}
	}
	// Charged by what the request costs, before the work: a request
	// counted once (the route's), then one more per auditBytesPerRequest
	// of body before it is parsed, then, once parsed, one per
	// auditPerRequest package versions asked about in all.
	pre := len(body) / auditBytesPerRequest
	if pre > 0 {
		if err := p.s.chargeFirewall(c, pre, auditHint); err != nil {
			return err
		}
	}
	var req map[string][]string
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return &Error{Status: http.StatusBadRequest, Message: `The request body must be a JSON object of package names to version lists ({"name": ["1.0.0"]}): ` + err.Error()}
	}
	asked := 0
	for _, versions := range req {
		asked += max(1, len(versions))
	}
	if extra := (asked+auditPerRequest-1)/auditPerRequest - 1 - pre; extra > 0 {
		if err := p.s.chargeFirewall(c, extra, auditHint); err != nil {
			return err
		}
	}
	site := c.Scheme() + "://" + c.Request().Host
	out := map[string][]npmAdvisory{}
	for name, versions := range req {
		v, err := p.lookup(c, core.RegistryNPM, name)
		var unjudgeable *firewall.Unjudgeable
		if errors.As(err, &unjudgeable) {
			continue // no report can name it, and nothing is served
		}
		if err != nil {
			return err
		}
		if v.Clean() {
			continue
		}
		for _, ver := range versions {
			b := v.Check(ver)
			if b == nil {
				continue
			}
			t := b.Threats[0]
			h := fnv.New64a()
			_, _ = h.Write([]byte(t.ID + "@" + ver))
			out[name] = append(out[name], npmAdvisory{
				ID:                 h.Sum64() >> 12, // within JavaScript's safe integers
				URL:                site + "/threats/" + t.ID,
				Title:              b.Message(),
				Severity:           npmSeverity(t.Details.SeverityLevel),
				VulnerableVersions: ver,
				CWE:                []string{"CWE-506"}, // embedded malicious code
				CVSS:               map[string]any{"score": 0, "vectorString": nil},
			})
		}
	}
	return c.JSON(http.StatusOK, out)
}
