package api

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
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

// npmName splits an npm path (unescaped) into the package name and the rest.
func npmName(p string) (name string, rest []string, ok bool) {
	segs := strings.Split(p, "/")
	n := 1
	if strings.HasPrefix(p, "@") {
		n = 2
	}
	if len(segs) < n || slices.Contains(segs[:n], "") {
		return "", nil, false
	}
	return strings.Join(segs[:n], "/"), segs[n:], true
}

// npmEscape is a package name as npm registries spell it in a path
// (@scope%2fname).
func npmEscape(name string) string {
	return strings.Replace(url.PathEscape(name), "%2F", "%2f", 1)
}

// npm serves {base}/firewall/npm/: package documents, version documents
// and tarballs; other registry endpoints (/-/ping, search) pass through.
func (p *proxy) npm(c *echo.Context) error {
	tail := p.tail(c, "npm")
	up := p.upstream(core.RegistryNPM)
	if tail == "" || strings.HasPrefix(tail, "-/") {
		u := up + "/" + tail
		if q := c.Request().URL.RawQuery; q != "" {
			u += "?" + q
		}
		return p.forward(c, core.RegistryNPM, u, c.Request().Header.Get("Accept"))
	}
	unescaped, err := url.PathUnescape(tail)
	if err != nil {
		return notFound("%q is not an npm package path", tail)
	}
	name, rest, ok := npmName(unescaped)
	if !ok {
		return notFound("%q is not an npm package path", unescaped)
	}
	v, err := p.lookup(c, core.RegistryNPM, name)
	if err != nil {
		return err
	}
	docURL := up + "/" + npmEscape(name)
	switch {
	case len(rest) == 0:
		if every := v.BlocksEvery(); len(every) > 0 {
			return p.refuse(c, &firewall.Blocked{Registry: core.RegistryNPM, Name: name, Threats: every}, false)
		}
		return p.document(c, core.RegistryNPM, docURL, npmAccept(c.Request().Header.Get("Accept")), v,
			func(body []byte, _, base string) (rendering, error) {
				out, err := rewriteNPMDocument(body, v, base)
				return rendering{out, "application/json"}, err
			})
	case len(rest) == 2 && rest[0] == "-":
		return p.npmTarball(c, v, docURL, rest[1])
	case len(rest) == 1:
		return p.npmVersionDocument(c, v, docURL, rest[0])
	}
	return notFound("%q is not an npm registry path", unescaped)
}

// npmVersionDocument answers /{name}/{version or tag}: refused when the
// version it names (a tag such as latest resolved by the upstream) is
// blocked, else with its tarball pointed at the firewall.
func (p *proxy) npmVersionDocument(c *echo.Context, v firewall.Verdict, docURL, spec string) error {
	if b := v.Check(spec); b != nil {
		return p.refuse(c, b, false)
	}
	res, err := p.fetch(c.Request().Context(), core.RegistryNPM, docURL+"/"+url.PathEscape(spec), "application/json")
	if err != nil {
		return err
	}
	if res.Status != http.StatusOK {
		return passThrough(c, res)
	}
	body, err := p.readDocument(core.RegistryNPM, res)
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return p.unreadable(core.RegistryNPM, err)
	}
	if b := v.Check(stringField(m, "version")); b != nil {
		return p.refuse(c, b, false)
	}
	if err := rewriteTarballField(m, v.Name, p.base(c, core.RegistryNPM)); err != nil {
		return p.unreadable(core.RegistryNPM, err)
	}
	return c.JSON(http.StatusOK, m)
}

// npmTarball answers a tarball: the version is the one whose dist.tarball
// the package document names file, and the file comes from that URL.
func (p *proxy) npmTarball(c *echo.Context, v firewall.Verdict, docURL, file string) error {
	res, err := p.fetch(c.Request().Context(), core.RegistryNPM, docURL, npmAccept("application/vnd.npm.install-v1+json"))
	if err != nil {
		return err
	}
	if res.Status != http.StatusOK {
		return passThrough(c, res)
	}
	key := "npm-tarballs\x00" + docURL + "\x00" + res.Version
	var table map[string][2]string // file → version, upstream URL
	if t, ok := p.parsed.Get(key); ok {
		_ = res.Body.Close()
		table = t.(map[string][2]string)
	} else {
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
		table = make(map[string][2]string, len(doc.Versions))
		size := int64(len(key))
		for ver, m := range doc.Versions {
			if m.Dist.Tarball != "" {
				table[path.Base(m.Dist.Tarball)] = [2]string{ver, m.Dist.Tarball}
				size += int64(len(ver) + 2*len(m.Dist.Tarball))
			}
		}
		if res.Hit {
			remember(p.parsed, parsedBytes, key, any(table), size)
		}
	}
	entry, ok := table[file]
	if !ok {
		return notFound("npm package %s has no tarball %s", v.Name, file)
	}
	if b := v.Check(entry[0]); b != nil {
		return p.refuse(c, b, false)
	}
	return p.stream(c, core.RegistryNPM, entry[1])
}

// rewriteNPMDocument removes blocked versions from an npm package document
// (versions, time, dist-tags: a tag on a removed version moves to the
// highest remaining one, or goes) and points every tarball at the firewall.
func rewriteNPMDocument(body []byte, v firewall.Verdict, base string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	name := stringField(doc, "name")
	if name == "" {
		name = v.Name
	}
	var versions map[string]json.RawMessage
	if raw, ok := doc["versions"]; ok {
		if err := json.Unmarshal(raw, &versions); err != nil {
			return nil, fmt.Errorf("versions: %w", err)
		}
	}
	removed := map[string]bool{}
	for ver, raw := range versions {
		if v.Check(ver) != nil {
			removed[ver] = true
			delete(versions, ver)
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("versions[%s]: %w", ver, err)
		}
		if err := rewriteTarballField(m, name, base); err != nil {
			return nil, fmt.Errorf("versions[%s]: %w", ver, err)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		versions[ver] = b
	}
	if versions != nil {
		b, err := json.Marshal(versions)
		if err != nil {
			return nil, err
		}
		doc["versions"] = b
	}
	if len(removed) > 0 {
		if raw, ok := doc["time"]; ok {
			var times map[string]json.RawMessage
			if json.Unmarshal(raw, &times) == nil {
				for ver := range removed {
					delete(times, ver)
				}
				doc["time"], _ = json.Marshal(times)
			}
		}
		if raw, ok := doc["dist-tags"]; ok {
			var tags map[string]string
			if err := json.Unmarshal(raw, &tags); err != nil {
				return nil, fmt.Errorf("dist-tags: %w", err)
			}
			highest := highestRelease(maps.Keys(versions), "v")
			for tag, ver := range tags {
				if removed[ver] {
					if highest == "" {
						delete(tags, tag)
					} else {
						tags[tag] = highest
					}
				}
			}
			doc["dist-tags"], _ = json.Marshal(tags)
		}
	}
	return json.Marshal(doc)
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
	dist["tarball"], _ = json.Marshal(base + "/" + npmEscape(name) + "/-/" + path.Base(tarball))
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
	var req map[string][]string
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return &Error{Status: http.StatusBadRequest, Message: `The request body must be a JSON object of package names to version lists ({"name": ["1.0.0"]}): ` + err.Error()}
	}
	site := c.Scheme() + "://" + c.Request().Host
	out := map[string][]npmAdvisory{}
	for name, versions := range req {
		v, err := p.lookup(c, core.RegistryNPM, name)
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
