package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"
	"golang.org/x/mod/module"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// golang serves {base}/firewall/go/, a GOPROXY: @v/list and @latest
// without blocked versions, and the .info, .mod and .zip of a blocked
// version refused. Refusals are text/plain unless JSON is asked for: the
// go command prints a refusal's body only when it is plain text. The
// checksum database proxy (/sumdb/) passes through.
func (p *proxy) golang(c *echo.Context) error {
	tail := p.tail(c, "go")
	up := p.upstream(core.RegistryGo)
	if strings.HasPrefix(tail, "sumdb/") {
		return p.forward(c, core.RegistryGo, up+"/"+tail, "")
	}
	escMod, what, ok := strings.Cut(tail, "/@")
	if !ok {
		return notFound("%q is not a module proxy path", tail)
	}
	mod, err := module.UnescapePath(escMod)
	if err != nil {
		return notFound("%q is not a module path: %v", escMod, err)
	}
	v, err := p.lookup(c, core.RegistryGo, mod)
	if err != nil {
		return err
	}
	upMod := up + "/" + escMod
	switch {
	case what == "v/list":
		if every := v.BlocksEvery(); len(every) > 0 {
			return p.refuse(c, &firewall.Blocked{Registry: core.RegistryGo, Name: mod, Threats: every}, true)
		}
		return p.document(c, core.RegistryGo, upMod+"/@v/list", "", v, func(body []byte, _, _ string) (rendering, error) {
			return rendering{[]byte(strings.Join(cleanGoVersions(string(body), v), "\n") + "\n"), "text/plain; charset=utf-8"}, nil
		})
	case what == "latest":
		return p.goLatest(c, v, upMod)
	case strings.HasPrefix(what, "v/"):
		file := strings.TrimPrefix(what, "v/")
		var escVer string
		for _, ext := range []string{".info", ".mod", ".zip"} {
			if s, ok := strings.CutSuffix(file, ext); ok {
				escVer = s
			}
		}
		ver, err := module.UnescapeVersion(escVer)
		if escVer == "" || err != nil {
			return notFound("%q is not a module proxy file", file)
		}
		if b := v.Check(ver); b != nil {
			return p.refuse(c, b, true)
		}
		return p.stream(c, core.RegistryGo, upMod+"/@v/"+file)
	}
	return notFound("%q is not a module proxy path", tail)
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
func (p *proxy) goLatest(c *echo.Context, v firewall.Verdict, upMod string) error {
	ctx := c.Request().Context()
	res, err := p.fetch(ctx, core.RegistryGo, upMod+"/@latest", "")
	if err != nil {
		return err
	}
	if res.Status != http.StatusOK || v.Clean() {
		return passThrough(c, res)
	}
	body, err := p.readDocument(core.RegistryGo, res)
	if err != nil {
		return err
	}
	var info struct{ Version string }
	if json.Unmarshal(body, &info) == nil && v.Check(info.Version) == nil {
		return c.Blob(http.StatusOK, "application/json", body)
	}
	list, err := p.fetch(ctx, core.RegistryGo, upMod+"/@v/list", "")
	if err != nil {
		return err
	}
	if list.Status != http.StatusOK {
		return passThrough(c, list)
	}
	lb, err := p.readDocument(core.RegistryGo, list)
	if err != nil {
		return err
	}
	best := highestRelease(slices.Values(cleanGoVersions(string(lb), v)), "")
	if best == "" {
		if every := v.BlocksEvery(); len(every) > 0 {
			return p.refuse(c, &firewall.Blocked{Registry: core.RegistryGo, Name: v.Name, Threats: every}, true)
		}
		if b := v.Check(info.Version); b != nil {
			return p.refuse(c, b, true)
		}
		return notFound("no clean version of %s", v.Name)
	}
	escVer, err := module.EscapeVersion(best)
	if err != nil {
		return notFound("no clean version of %s", v.Name)
	}
	return p.stream(c, core.RegistryGo, upMod+"/@v/"+escVer+".info")
}
