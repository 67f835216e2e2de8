package proxy

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core/firewall"
)

// The costs of an audit: one firewall request per auditPerRequest package
// versions it asks about, and, charged before its body is parsed, one per
// auditBytesPerRequest bytes of it (a lockfile of 1,000 packages is about
// 40 KB of npm audit request).
const (
	auditPerRequest      = 1000
	auditBytesPerRequest = 64 << 10
	auditHint            = " (an audit counts one request per 1,000 package versions)"
)

// audit answers a registry's bulk-advisory request (npm audit), often
// gzip-compressed, with the adapter's advisories for every refused
// version it asks about.
func (p *Proxy) audit(a firewall.Adapter, au firewall.Auditor) echo.HandlerFunc {
	reg := a.Registry()
	return func(c *echo.Context) error {
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
		// Charged by what the request costs, before the work: the
		// route's one request, one more per auditBytesPerRequest of
		// body before it is parsed, then, once parsed, one per
		// auditPerRequest versions asked about in all.
		pre := len(body) / auditBytesPerRequest
		if pre > 0 {
			if err := p.host.Charge(c, pre, auditHint); err != nil {
				return err
			}
		}
		asked, err := au.ParseAudit(body)
		if err != nil {
			return err
		}
		n := 0
		for _, versions := range asked {
			n += max(1, len(versions))
		}
		if extra := (n+auditPerRequest-1)/auditPerRequest - 1 - pre; extra > 0 {
			if err := p.host.Charge(c, extra, auditHint); err != nil {
				return err
			}
		}
		var found []firewall.AuditFinding
		for name, versions := range asked {
			v, err := p.lookup(c, reg, name)
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
				if b := v.Check(ver); b != nil {
					found = append(found, firewall.AuditFinding{Name: name, Blocked: b})
				}
			}
		}
		out, err := au.RenderAudit(found, c.Scheme()+"://"+c.Request().Host)
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, typeJSON, out)
	}
}
