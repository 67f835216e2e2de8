package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core/firewall"
)

// refuse answers a blocked version: 403 with the message, the ids of the
// reports and the newest of them as check-malicious shows it; counted in
// metrics, logged with the token's user, kept for the admin page. plain
// answers text/plain, for clients that show only such bodies (the go
// command), unless the request accepts JSON.
func (p *Proxy) refuse(c *echo.Context, b *firewall.Blocked, plain bool) error {
	who := p.host.Who(c)
	ids := b.ThreatIDs()
	p.log.Warn("firewall blocked a package", "user", who, "registry", b.Registry,
		"package", b.Name, "version", b.Version, "threat_ids", ids)
	if p.host.Blocked != nil {
		p.host.Blocked(b.Registry)
	}
	if p.opts.Recent != nil {
		p.opts.Recent.Add(firewall.Event{Time: time.Now(), User: who, Registry: b.Registry, Name: b.Name, Version: b.Version, ThreatIDs: ids})
	}
	if plain && !strings.Contains(c.Request().Header.Get("Accept"), "json") {
		return plainAnswer(c, http.StatusForbidden, b.Message())
	}
	return &Error{Status: http.StatusForbidden, Message: b.Message(),
		Fields: map[string]any{"rule": firewall.RuleMalicious, "threat_ids": ids, "details": p.host.Record(c, b.Threats[0])}}
}

// refuseWithReason is refuse for clients that print only the status
// line of a failed download (pip, through requests): over HTTP/1.1 the
// status line's reason phrase carries the refusal's message. The body is
// the same JSON (none to a HEAD).
func (p *Proxy) refuseWithReason(c *echo.Context, b *firewall.Blocked) error {
	if c.Request().ProtoMajor != 1 {
		return p.refuse(c, b, false)
	}
	err := p.refuse(c, b, false)
	fe, ok := err.(*Error)
	if !ok {
		return err
	}
	return p.refuseErrorWithReason(c, fe)
}

// refuseErrorWithReason writes fe with its message as the reason phrase
// over HTTP/1.1 (refuseWithReason).
func (p *Proxy) refuseErrorWithReason(c *echo.Context, fe *Error) error {
	r := c.Request()
	if r.ProtoMajor != 1 {
		return fe
	}
	err := error(fe)
	body, jerr := json.Marshal(fe.Body())
	if jerr != nil {
		return err
	}
	conn, buf, herr := http.NewResponseController(c.Response()).Hijack()
	if herr != nil {
		return err
	}
	defer conn.Close()
	reason := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, fe.Message)
	// The headers set so far (RateLimit-*, the request id, no-store,
	// nosniff) go out as on any other answer.
	h := c.Response().Header().Clone()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	fmt.Fprintf(buf, "HTTP/1.1 403 %s\r\n", reason)
	_ = h.Write(buf)
	buf.WriteString("\r\n")
	if r.Method != http.MethodHead {
		buf.Write(body)
	}
	if resp, _ := echo.UnwrapResponse(c.Response()); resp != nil {
		resp.Status, resp.Committed = http.StatusForbidden, true
	}
	return buf.Flush()
}

// refuseAs writes a refusal as the route's registry wants it.
func (p *Proxy) refuseAs(c *echo.Context, rt firewall.Route, b *firewall.Blocked) error {
	switch rt.Refusal {
	case firewall.RefusePlain:
		return p.refuse(c, b, true)
	case firewall.RefuseReason:
		return p.refuseWithReason(c, b)
	}
	return p.refuse(c, b, false)
}
