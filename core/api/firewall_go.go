package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/goproxy"
)

// golang serves {base}/firewall/go/, a GOPROXY: @v/list and @latest
// without blocked versions, and the .info, .mod and .zip of a blocked
// version refused. Refusals are text/plain unless JSON is asked for: the
// go command prints a refusal's body only when it is plain text. The
// checksum database proxy (/sumdb/) passes through. Every upstream path is
// rebuilt from the module and version judged (goproxy.Parse).
func (p *proxy) golang(c *echo.Context) error {
	r, ok, err := goproxy.Parse(p.tail(c, "go"))
	if err != nil {
		return cannotJudge(c, err, true)
	}
	if !ok {
		return notFound("%q is not a module proxy path", p.tail(c, "go"))
	}
	if r.Kind == goproxy.SumDB {
		return p.forward(c, core.RegistryGo, strings.TrimSuffix(p.opts.Upstreams[core.RegistryGo].URL, "/")+"/"+r.Path, "", typeText)
	}
	v, err := p.lookup(c, core.RegistryGo, r.Module)
	if err != nil {
		return cannotJudge(c, err, true)
	}
	up, err := p.upstream(core.RegistryGo, v)
	if err != nil {
		return err
	}
	switch r.Kind {
	case goproxy.List:
		if every := v.BlocksEvery(); len(every) > 0 {
			return p.refuse(c, &firewall.Blocked{Registry: core.RegistryGo, Name: r.Module, Threats: every}, true)
		}
		return p.document(c, core.RegistryGo, up+"/"+r.UpstreamPath(), "", v, func(body []byte, _, _ string) (rendering, error) {
			return rendering{[]byte(strings.Join(cleanGoVersions(string(body), v), "\n") + "\n"), typeText}, nil
		})
	case goproxy.Latest:
		return p.goLatest(c, v, up, r.Module)
	}
	if b := v.Check(r.Version); b != nil {
		return p.refuse(c, b, true)
	}
	contentType := typeFile
	switch r.Ext {
	case ".info":
		contentType = typeJSON
	case ".mod":
		contentType = typeText
	}
	return p.stream(c, core.RegistryGo, up+"/"+r.UpstreamPath(), contentType)
}

// cleanGoVersions is a @v/list without blocked versions.
func cleanGoVersions(list string, v firewall.Verdict) []string {
	var out []string
	for line := range strings.SplitSeq(list, "\n") {
		ver := strings.TrimSpace(line)
		if ver == "" || v.Check(ver) != nil {
			continue
		}
		out = append(out, ver)
	}
	return out
}

// goLatest answers @latest: the upstream's, unless it is blocked; then the
// .info of the highest clean release in @v/list (pre-release when there
// is none), or 404 when no version is clean.
func (p *proxy) goLatest(c *echo.Context, v firewall.Verdict, up, mod string) error {
	ctx := c.Request().Context()
	body, res, err := p.fetchDocument(ctx, core.RegistryGo, up+"/"+goproxy.ModulePath(mod)+"/@latest", "")
	if err != nil {
		return err
	}
	if res != nil {
		return passThrough(c, res, "")
	}
	var info struct{ Version string }
	if json.Unmarshal(body, &info) == nil && v.Check(info.Version) == nil && info.Version != "" {
		return c.Blob(http.StatusOK, typeJSON, body)
	}
	lb, res, err := p.fetchDocument(ctx, core.RegistryGo, up+"/"+goproxy.ModulePath(mod)+"/@v/list", "")
	if err != nil {
		return err
	}
	if res != nil {
		return passThrough(c, res, "")
	}
	best := highestRelease(slices.Values(cleanGoVersions(string(lb), v)), "")
	if best == "" {
		if every := v.BlocksEvery(); len(every) > 0 {
			return p.refuse(c, &firewall.Blocked{Registry: core.RegistryGo, Name: v.Name, Threats: every}, true)
		}
		if b := v.Check(info.Version); b != nil && info.Version != "" {
			return p.refuse(c, b, true)
		}
		return notFound("no clean version of %s", v.Name)
	}
	return p.stream(c, core.RegistryGo, up+"/"+goproxy.FilePath(mod, best, ".info"), typeJSON)
}
