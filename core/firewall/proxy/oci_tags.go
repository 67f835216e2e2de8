package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/oci"
)

// tags answers a tag list without reported tags.
func (o *ociProxy) tags(c *echo.Context, req oci.Request) error {
	ctx := c.Request().Context()
	path := req.Upstream + "/tags/list"
	if q := c.Request().URL.Query(); len(q) > 0 {
		path += "?" + url.Values{"n": q["n"], "last": q["last"]}.Encode()
	}
	res, err := o.do(ctx, http.MethodGet, path, req.Upstream, nil)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return passUpstream(c, res)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxTagList+1))
	if err != nil {
		return o.p.unreachable(firewall.FirewallOCI, err)
	}
	var list struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}
	if len(body) > maxTagList || json.Unmarshal(body, &list) != nil {
		return &Error{Status: http.StatusBadGateway, Message: fmt.Sprintf("The OCI upstream's tag list of %s is not JSON the firewall reads (at most %d MiB)", req.Name, maxTagList>>20)}
	}
	rep, err := o.reported(ctx, req.Name)
	if err != nil {
		return err
	}
	if len(rep.Every) > 0 && o.refusedQuietly(req.Name, "") {
		// Every tag of the repository is refused.
		return o.deny(c, req, rep.Every)
	}
	kept := make([]string, 0, len(list.Tags))
	for _, t := range list.Tags {
		if len(rep.Tags[t]) == 0 || !o.refusedQuietly(req.Name, t) {
			kept = append(kept, t)
		}
	}
	if l := oci.NextLink(res.Header.Get("Link"), req.Client); l != "" {
		c.Response().Header().Set("Link", l)
	}
	out, _ := json.Marshal(map[string]any{"name": req.Client, "tags": kept})
	return c.Blob(http.StatusOK, typeJSON, out)
}

// refusedQuietly says whether a reported tag is refused, without
// recording a decision (a listing is not one).
func (o *ociProxy) refusedQuietly(name, tag string) bool {
	return o.p.opts.Policy.Action(firewall.RuleMalicious) == firewall.ActionBlock &&
		!o.p.opts.Waivers.Current().Lifts(firewall.FirewallOCI, name, tag, firewall.RuleMalicious, time.Now())
}
