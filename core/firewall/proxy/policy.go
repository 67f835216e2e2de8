package proxy

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v5"
	"golang.org/x/sync/errgroup"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/cache"
)

// facts reads the facts of a package's versions from the upstream
// (FactSource): one document of them all, or each version's own (only
// those of versions, then; all of them when versions is nil). Kept while
// the documents are.
//
// listing says whether versions are what a listing of the package names
// (else a request for one version). Read one by one, only the newest
// FactsPerDocument of a listing's versions are (Facts.Unjudged); for an
// adapter whose times are the author's (AuthorTimes), a version that
// appeared after the package was first listed is held from then.
//
// have, when not nil, is what the document being rendered lists: used
// when it is the facts document itself.
func (p *Proxy) facts(ctx context.Context, a firewall.Adapter, v firewall.Verdict, up string, versions []string, listing bool, have ...firewall.Published) (map[string]firewall.Facts, error) {
	fs := a.(firewall.FactSource)
	reg, name := v.Registry, v.Name
	now := time.Now()
	out := map[string]firewall.Facts{}
	add := func(ps []firewall.Published) {
		for _, pv := range ps {
			f := firewall.Facts{Published: pv.Time, NewScripts: pv.NewScripts, Previous: pv.Previous}
			out[pv.Version] = f
		}
	}
	// unknown: no document said which versions exist (its upstream has
	// none, or not in a form the adapter reads): the versions asked
	// about have no time (missing_time decides). Otherwise a version no
	// document lists is left to the upstream (its 404).
	unknown := false
	path, accept := fs.FactsDocument(name)
	if have != nil {
		add(have)
	} else if path != "" {
		factsURL, err := p.at(ctx, a, up, path)
		if err != nil {
			return nil, err
		}
		if pf, ok := a.(firewall.PostedFacts); ok {
			factsURL = cache.PostRequest(factsURL, pf.FactsBody(name))
		}
		ps, ok, err := p.published(ctx, a, reg, factsURL, accept, name)
		if err != nil {
			return nil, err
		}
		add(ps)
		unknown = !ok
	} else {
		judged := versions
		if len(versions) > firewall.FactsPerDocument {
			order := versions
			if o, ok := a.(firewall.Ordered); ok {
				order = o.Order(versions)
			}
			judged = order[len(order)-firewall.FactsPerDocument:]
			for _, ver := range order[:len(order)-firewall.FactsPerDocument] {
				out[ver] = firewall.Facts{Unjudged: true}
			}
		}
		var mu sync.Mutex
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for _, ver := range judged {
			g.Go(func() error {
				factsURL, err := p.at(gctx, a, up, fs.VersionFactsPath(name, ver))
				if err != nil {
					return err
				}
				ps, _, err := p.published(gctx, a, reg, factsURL, "", name)
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				for _, pv := range ps {
					if pv.Version == ver || len(ps) == 1 {
						pv.Version = ver
						add([]firewall.Published{pv})
					}
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
	}
	for ver, f := range out {
		if f.Published.IsZero() && !f.Unjudged {
			f.FirstSeen = p.opts.Recorder.FirstSeen(reg, name, ver, now)
			out[ver] = f
		}
	}
	if at, ok := a.(firewall.AuthorTimes); ok {
		var listed []string
		for _, ver := range versions {
			if at.Listed(ver) {
				listed = append(listed, ver)
			}
		}
		for ver, t := range p.listings.Appeared(reg, name, listed, listing, now) {
			if f, ok := out[ver]; ok && !f.Unjudged {
				f.Appeared = t
				out[ver] = f
			}
		}
	}
	if unknown {
		for _, ver := range versions {
			if _, ok := out[ver]; !ok {
				out[ver] = firewall.Facts{FirstSeen: p.opts.Recorder.FirstSeen(reg, name, ver, now)}
			}
		}
	}
	return out, nil
}

// published reads the versions and times of one upstream document, kept
// while it is. A document the upstream does not have, or that cannot be
// read, gives none, and ok false.
func (p *Proxy) published(ctx context.Context, a firewall.Adapter, reg, docURL, accept, name string) (ps []firewall.Published, ok bool, err error) {
	ps, res, err := parsedDocument(ctx, p, reg, docURL, accept, "facts", func(doc firewall.Document) ([]firewall.Published, error) {
		doc.Name = name
		ps, err := a.Versions(doc)
		if err != nil {
			return nil, nil // unreadable: no facts (missing_time decides)
		}
		if ps == nil {
			ps = []firewall.Published{} // read, and lists none
		}
		return ps, nil
	}, func(ps []firewall.Published) int64 {
		var size int64
		for _, pv := range ps {
			size += int64(len(pv.Version)) + 64
		}
		return size
	})
	if res != nil {
		_ = res.Body.Close()
	}
	return ps, ps != nil, err
}

// renderingKey marks the context of a rendering (it holds budget).
type renderingKey struct{}

// upstreamFacts is the gate's FactReader for one package: its facts read
// from the upstream up (facts).
type upstreamFacts struct {
	p  *Proxy
	a  firewall.Adapter
	v  firewall.Verdict
	up string
}

func (u upstreamFacts) ReadFacts(ctx context.Context, versions []string, listing bool, have []firewall.Published) (map[string]firewall.Facts, error) {
	return u.p.facts(ctx, u.a, u.v, u.up, versions, listing, have...)
}

// rule asks the gate for the rulings of versions of v's package, whose
// facts it reads from up when needed.
func (p *Proxy) rule(ctx context.Context, a firewall.Adapter, v firewall.Verdict, up string, listing bool, versions ...string) ([]firewall.Ruling, error) {
	return p.gate.Rule(ctx, a, v, versions, listing, upstreamFacts{p, a, v, up})
}

// decided records a decision about one version (an artifact or a
// document of it alone) and sets the warning headers of the answer.
func (p *Proxy) decided(c *echo.Context, v firewall.Verdict, version string, r firewall.Ruling) {
	if !r.Refused() {
		p.opts.Policy.Fetched(v, version)
	}
	if !r.Recorded() {
		return
	}
	h := c.Response().Header()
	for i, w := range r.Warnings {
		if i < firewall.MaxWarnings {
			h.Add("X-Threatd-Warning", headerText(w))
		}
	}
	p.gate.Decide(v, version, r, p.asker(c))
}

// asker is who asked, as a decision records it.
func (p *Proxy) asker(c *echo.Context) firewall.Asker {
	return firewall.Asker{User: p.host.Who(c), ClientIP: c.RealIP()}
}

// headerText is text as a header value may carry it: printable ASCII.
func headerText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}

// refuseRuling answers a refused version: a report's refusal as before,
// a hold as the 403 of docs/firewall.md with its rule and end.
func (p *Proxy) refuseRuling(c *echo.Context, rt firewall.Route, v firewall.Verdict, version string, r firewall.Ruling) error {
	p.decided(c, v, version, r)
	if r.Rule == firewall.RuleMalicious && r.Blocked != nil {
		return p.refuseAs(c, rt, r.Blocked)
	}
	fields := map[string]any{"rule": r.Rule}
	if !r.Until.IsZero() {
		fields["until"] = r.Until.UTC().Format(time.RFC3339)
	}
	if r.Rule == firewall.RuleSuspicious {
		fields["findings"] = r.Findings
	}
	p.log.Info("firewall held a package", "user", p.host.Who(c), "registry", v.Registry, "package", v.Name, "version", version, "rule", r.Rule)
	err := &Error{Status: http.StatusForbidden, Message: r.Message, Fields: fields}
	switch rt.Refusal {
	case firewall.RefusePlain:
		if !strings.Contains(c.Request().Header.Get("Accept"), "json") {
			return plainAnswer(c, http.StatusForbidden, r.Message)
		}
	case firewall.RefuseReason:
		return p.refuseErrorWithReason(c, err)
	}
	return err
}

// served counts, in the ledger, the versions of an artifact answered 200
// (err: the answer's error, passed on).
func (p *Proxy) served(c *echo.Context, v firewall.Verdict, err error, versions ...string) error {
	if err != nil || p.opts.Ledger == nil {
		return err
	}
	if r, uerr := echo.UnwrapResponse(c.Response()); uerr != nil || r.Status != http.StatusOK {
		return nil
	}
	token := ""
	if p.host.Token != nil {
		token = p.host.Token(c)
	}
	now := time.Now()
	for _, ver := range versions {
		if ver == "" {
			continue
		}
		e := firewall.LedgerEntry{Ecosystem: v.Registry, Name: firewall.FoldName(v.Registry, v.Name), Version: ver, User: p.host.Who(c), TokenID: token, ClientIP: c.RealIP()}
		if e.Purl = core.VersionPurl(firewall.RegistryOfFirewall(v.Registry), v.Name, ver); e.Purl == "" && v.Registry == firewall.FirewallOCI {
			e.Purl = "pkg:docker/" + v.Name + "@" + url.PathEscape(ver)
		}
		p.opts.Ledger.Served(e, now)
	}
	return nil
}
