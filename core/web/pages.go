package web

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// safeNext keeps a post-log-in redirect on this site: a local path only.
// It judges next as a browser resolves it: the WHATWG URL parser removes
// every tab and newline first (so "/\t/evil.example/" is "//evil.example/",
// another host) and reads a backslash as a slash. Whatever could leave
// this origin, or holds another control character, goes to My submissions.
func safeNext(next string) string {
	const home = "/me/submissions"
	cleaned := strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, next)
	if !strings.HasPrefix(cleaned, "/") || len(cleaned) > 2048 {
		return home
	}
	if len(cleaned) > 1 && (cleaned[1] == '/' || cleaned[1] == '\\') {
		return home
	}
	for _, r := range cleaned {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return home
		}
	}
	u, err := url.Parse(cleaned)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") {
		return home
	}
	return cleaned
}

func (s *Site) indexReady() bool {
	ready, _, _ := s.index.Progress()
	return ready
}

func (s *Site) signupForm(c *echo.Context) error {
	if s.opts.Signup != SignupOpen {
		return s.errorPage(c, http.StatusForbidden, "Sign-up is closed on this threatd: ask an administrator for an account.")
	}
	return s.render(c, http.StatusOK, "signup", map[string]any{"Title": "Sign up", "Form": url.Values{}, "Errors": map[string]string{}})
}

func (s *Site) signup(c *echo.Context) error {
	if s.opts.Signup != SignupOpen {
		return s.errorPage(c, http.StatusForbidden, "Sign-up is closed on this threatd: ask an administrator for an account.")
	}
	f, _ := c.FormValues()
	email, name, pw := f.Get("email"), f.Get("name"), f.Get("password")
	again := s.logins.Take("signup-ip:"+c.RealIP(), s.opts.LoginAttemptsIP, 1)
	if !again.Allowed {
		return s.render(c, http.StatusTooManyRequests, "signup", map[string]any{"Title": "Sign up", "Form": f,
			"Errors": map[string]string{"form": fmt.Sprintf("Too many sign-ups from your address: try again in %d seconds.", again.ResetSeconds())}})
	}
	s.hashing <- struct{}{}
	u, err := s.accounts.SignUp(c.Request().Context(), email, name, pw)
	<-s.hashing
	if err != nil {
		errs := map[string]string{}
		var fe *core.FieldError
		var ce *core.ConflictError
		switch {
		case errors.As(err, &fe):
			if fe.Field == "name" {
				errs["name"] = "Public name " + fe.Message
			} else {
				errs[fe.Field] = strings.ToUpper(fe.Field[:1]) + fe.Field[1:] + " " + fe.Message
			}
		case errors.As(err, &ce):
			errs["email"] = "An account with this e-mail already exists: log in instead."
		default:
			return err
		}
		f.Del("password")
		return s.render(c, http.StatusBadRequest, "signup", map[string]any{"Title": "Sign up", "Form": f, "Errors": errs})
	}
	s.log.Info("web: sign-up", "user", u.ID)
	// The password was just hashed for the new account: the session opens
	// without checking it again.
	secret, err := s.accounts.OpenSession(c.Request().Context(), u, s.opts.SessionTTL)
	if err != nil {
		return err
	}
	return s.setSession(c, secret, "/settings/tokens")
}

func (s *Site) loginForm(c *echo.Context) error {
	return s.render(c, http.StatusOK, "login", map[string]any{"Title": "Log in", "Next": c.QueryParam("next")})
}

// login checks the password under the per-account and per-IP throttles.
// Each attempt is reserved against both before the password is hashed, so
// concurrent attempts cannot overtake the count (all of them used to be
// hashed before the first failure was counted); a successful log-in gives
// its reservation back, so only failures use up the attempts. Once an
// account (or an address) has used its attempts in the window, even the
// right password waits.
func (s *Site) login(c *echo.Context) error {
	f, _ := c.FormValues()
	email := strings.ToLower(strings.TrimSpace(f.Get("email")))
	data := map[string]any{"Title": "Log in", "Next": f.Get("next"), "Email": email}
	undo, wait, ok := s.attempt(c, email)
	if !ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(wait))
		data["Error"] = fmt.Sprintf("Too many log-in attempts: try again in %d seconds.", wait)
		return s.render(c, http.StatusTooManyRequests, "login", data)
	}
	return s.startSession(c, email, f.Get("password"), safeNext(f.Get("next")), undo)
}

// attempt takes one password attempt from the budgets of the client's
// address and of the account (both or neither), before the password is
// hashed, so that concurrent attempts cannot overtake the count; undo gives
// it back (the password was right). When either budget is spent, ok is
// false and wait is when it refills, in seconds.
func (s *Site) attempt(c *echo.Context, email string) (undo func(), wait int, ok bool) {
	ipKey, acctKey := "ip:"+c.RealIP(), "account:"+email
	ip := s.logins.Take(ipKey, s.opts.LoginAttemptsIP, 1)
	if !ip.Allowed {
		return nil, ip.ResetSeconds(), false
	}
	acct := s.logins.Take(acctKey, s.opts.LoginAttempts, 1)
	if !acct.Allowed {
		s.logins.Take(ipKey, s.opts.LoginAttemptsIP, -1)
		return nil, acct.ResetSeconds(), false
	}
	return func() {
		s.logins.Take(ipKey, s.opts.LoginAttemptsIP, -1)
		s.logins.Take(acctKey, s.opts.LoginAttempts, -1)
	}, 0, true
}

// startSession logs in and sets a new session cookie (a new id at every
// log-in: a session id planted before log-in is never promoted); succeeded
// (if not nil) runs when the password was right.
func (s *Site) startSession(c *echo.Context, email, pw, next string, succeeded func()) error {
	s.hashing <- struct{}{}
	secret, u, err := s.accounts.LogIn(c.Request().Context(), email, boundedPassword(pw), s.opts.SessionTTL)
	<-s.hashing
	if errors.Is(err, core.ErrBadCredentials) {
		return s.render(c, http.StatusUnauthorized, "login", map[string]any{"Title": "Log in", "Email": email, "Next": next,
			"Error": "The e-mail or password is not right."})
	}
	if errors.Is(err, core.ErrAccountDisabled) {
		return s.render(c, http.StatusForbidden, "login", map[string]any{"Title": "Log in", "Email": email, "Next": next,
			"Error": "This account is disabled. Ask an administrator of this threatd to enable it."})
	}
	if err != nil {
		return err
	}
	if succeeded != nil {
		succeeded()
	}
	s.log.Info("web: log-in", "user", u.ID)
	return s.setSession(c, secret, next)
}

// setSession replaces the visitor's session cookie (and ends a previous
// session) with a new one, then goes to next.
func (s *Site) setSession(c *echo.Context, secret, next string) error {
	if old, err := c.Cookie(sessionCookie); err == nil && old.Value != "" {
		_ = s.accounts.LogOut(c.Request().Context(), old.Value)
	}
	s.setCookie(c, sessionCookie, secret, s.opts.SessionTTL)
	s.clearCookie(c, csrfCookie)
	return c.Redirect(http.StatusSeeOther, next)
}

func (s *Site) logout(c *echo.Context) error {
	if v := viewerOf(c); v.LoggedIn {
		if err := s.accounts.LogOut(c.Request().Context(), v.sessionID); err != nil {
			return err
		}
	}
	s.clearCookie(c, sessionCookie)
	return c.Redirect(http.StatusSeeOther, "/")
}

const pageSize = 25

// submissions is My submissions: the viewer's reports, newest first.
func (s *Site) submissions(c *echo.Context) error {
	page, _ := strconv.Atoi(c.QueryParam("page"))
	page = max(page, 1)
	v := viewerOf(c)
	list, total, err := s.store.ListSubmissions(c.Request().Context(), v.User.ID, (page-1)*pageSize, pageSize)
	if err != nil {
		return err
	}
	pages := max((total+pageSize-1)/pageSize, 1)
	return s.render(c, http.StatusOK, "submissions", map[string]any{"Title": "My submissions", "Reports": list,
		"Page": page, "Pages": pages, "Total": total, "Prev": page - 1, "Next": nextPage(page, pages)})
}

func nextPage(page, pages int) int {
	if page < pages {
		return page + 1
	}
	return 0
}

// threat is a report's page: public when verified; pending and rejected
// reports only for their submitter and reviewers (404 to anyone else).
// /threats/<id>.json is the public record of a verified report, as the API
// gives it.
func (s *Site) threat(c *echo.Context) error {
	ctx := c.Request().Context()
	id, asJSON := strings.CutSuffix(c.Param("id"), ".json")
	t, err := s.store.GetThreat(ctx, id)
	if errors.Is(err, core.ErrNotFound) || (err == nil && !s.mayView(c, t)) || (err == nil && asJSON && t.Status != core.StatusVerified) {
		if asJSON {
			return c.JSON(http.StatusNotFound, map[string]string{"error": "No published threat has this id"})
		}
		return s.errorPage(c, http.StatusNotFound, "No published threat has this id.")
	}
	if err != nil {
		return err
	}
	if asJSON {
		return c.JSON(http.StatusOK, s.opts.Record(t))
	}
	v := viewerOf(c)
	t = t.VisibleTo(core.Principal{User: v.User})
	events, err := s.store.ReviewEvents(ctx, t.ID)
	if err != nil {
		return err
	}
	revs, err := s.store.ListRevisions(ctx, t.ID)
	if err != nil {
		return err
	}
	owner := v.LoggedIn && v.User.ID == t.SubmitterID
	if !owner && !v.User.Role.CanReview() {
		// The public sees decided revisions only, without internal notes.
		revs = publicRevisions(revs)
	}
	payload := t.Details.PayloadDescription
	if t.Source != "" {
		payload = upstreamBoilerplate.ReplaceAllString(payload, "")
	}
	data := map[string]any{
		"Title": fmt.Sprintf("%s %s", t.ReportType, t.ResourceIdentifier), "T": t,
		"Payload": s.markdown(payload), "Evidence": splitPipes(t.Details.EvidenceReferences),
		"IOCs": core.ExtractIOCs(t), "Events": events, "Revisions": revisionViews(t, revs),
		"Owner": owner, "ShowContact": t.Details.ContactEmail != "", "Imported": t.Source == core.OSVSource,
	}
	if t.Status == core.StatusVerified {
		data["Links"] = s.threatLinks(t)
	}
	return s.render(c, http.StatusOK, "threat", data)
}

// upstreamBoilerplate is the line OSV's malicious-packages records put
// before their per-source details, for their editors, not for readers.
var upstreamBoilerplate = regexp.MustCompile(`(?m)^[ \t]*(?:---[ \t]*\n\s*)?_?-= Per source details\. Do not edit below this line\.=-_?[ \t]*$\n?`)

// threatLink is one rendering of a report elsewhere.
type threatLink struct {
	Name, URL, Note string
}

// threatLinks are a verified report's other renderings: its JSON record
// here, its OSV record and STIX objects through the API, and the check
// that finds it.
func (s *Site) threatLinks(t core.Threat) []threatLink {
	links := []threatLink{{Name: "JSON", URL: "/threats/" + t.ID + ".json", Note: "the public record"}}
	if core.HasOSVRecord(t) {
		links = append(links, threatLink{Name: "OSV", URL: s.opts.BasePath + "/osv/v1/vulns/" + core.OSVRecordOf(t), Note: "OSV record (API token)"})
	}
	all := core.TAXIICollections()[0]
	links = append(links, threatLink{Name: "STIX", URL: "/taxii2/api/collections/" + all.ID + "/objects/" + core.STIXMalwareID(t.ID) + "/",
		Note: "STIX 2.1 objects over TAXII (paid token)"})
	q := core.CheckQuery{ReportType: t.ReportType, ResourceIdentifier: t.ResourceIdentifier}
	if t.ReportType == core.TypePackage || t.ReportType == core.TypeContainer {
		q.Ecosystem = t.Registry
	}
	links = append(links, threatLink{Name: "check-malicious", URL: checkURL(s.opts.BasePath, q, false), Note: "the check that finds it (API token)"})
	return links
}

func (s *Site) mayView(c *echo.Context, t core.Threat) bool {
	if t.Status == core.StatusVerified {
		return true
	}
	v := viewerOf(c)
	return v.LoggedIn && (v.User.ID == t.SubmitterID || v.User.Role.CanReview())
}

func publicRevisions(revs []core.Revision) []core.Revision {
	var out []core.Revision
	for _, r := range revs {
		if r.State == core.RevisionApproved || r.State == core.RevisionApplied {
			out = append(out, r)
		}
	}
	return out
}

func splitPipes(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "|") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// revisionView is a revision with what it changes: for a pending one, the
// field-by-field diff against the report as it is now (what a reviewer
// decides on); for a decided one, the fields it gave (its diff against the
// report now would be empty once applied).
type revisionView struct {
	core.Revision
	Changes    []core.FieldChange
	Fields     []string
	Unapplying string // why a pending revision no longer applies
}

func revisionViews(t core.Threat, revs []core.Revision) []revisionView {
	out := make([]revisionView, len(revs))
	for i, r := range revs {
		out[i] = revisionOf(t, r)
	}
	return out
}

func revisionOf(t core.Threat, r core.Revision) revisionView {
	v := revisionView{Revision: r}
	if r.State != core.RevisionPending {
		v.Fields = core.PatchFields(r.Patch)
		return v
	}
	changes, err := core.ProposedChanges(t, r.Patch)
	if err != nil {
		v.Unapplying, v.Fields = err.Error(), core.PatchFields(r.Patch)
	}
	v.Changes = changes
	return v
}

// tokens is Settings → API Tokens.
func (s *Site) tokens(c *echo.Context) error {
	return s.renderTokens(c, http.StatusOK, "", "", nil)
}

func (s *Site) renderTokens(c *echo.Context, status int, secret, nameErr string, created *core.Token) error {
	list, err := s.accounts.Tokens(c.Request().Context(), viewerOf(c).User)
	if err != nil {
		return err
	}
	return s.render(c, status, "tokens", map[string]any{"Title": "API Tokens", "Tokens": list, "Secret": secret,
		"NameError": nameErr, "Created": created, "BasePath": s.opts.BasePath, "Host": c.Request().Host})
}

func (s *Site) generateToken(c *echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	secret, tok, err := s.accounts.IssueUserToken(c.Request().Context(), viewerOf(c).User, name)
	var fe *core.FieldError
	if errors.As(err, &fe) {
		return s.renderTokens(c, http.StatusBadRequest, "", "Name "+fe.Message, nil)
	}
	if err != nil {
		return err
	}
	// The secret is shown in this response only; the page is no-store.
	return s.renderTokens(c, http.StatusOK, secret, "", &tok)
}

func (s *Site) revokeToken(c *echo.Context) error {
	ctx := c.Request().Context()
	if c.FormValue("confirm") != "yes" {
		// Revoking cannot be undone: ask first (a page, so it works
		// without script).
		list, err := s.accounts.Tokens(ctx, viewerOf(c).User)
		if err != nil {
			return err
		}
		for _, t := range list {
			if t.ID == c.Param("id") && !t.Revoked() {
				return s.render(c, http.StatusOK, "confirm", map[string]any{"Title": "Revoke token “" + t.Name + "”?",
					"Message": "Tools that use " + core.TokenDisplay(t) + " will be refused from now on. This cannot be undone: a revoked token stays revoked.",
					"Action":  "/settings/tokens/" + t.ID + "/revoke", "Button": "Revoke token", "Cancel": "/settings/tokens"})
			}
		}
		return s.errorPage(c, http.StatusNotFound, "You have no active token with this id.")
	}
	t, err := s.accounts.RevokeUserToken(ctx, viewerOf(c).User, c.Param("id"))
	if err != nil {
		return err
	}
	s.setFlash(c, "ok", "Token “"+t.Name+"” is revoked.")
	if err := s.sync(ctx); err != nil {
		s.log.Warn("web: the revocation will show within cache.freshness", "error", err.Error())
	}
	return c.Redirect(http.StatusSeeOther, "/settings/tokens")
}

// queuePage is how many pending reports one page of the review queue shows.
const queuePage = 50

// queue is the review queue: pending reports and pending revisions.
func (s *Site) queue(c *echo.Context) error {
	ctx := c.Request().Context()
	// One keyset page of queuePage reports at a time, oldest first: after=
	// names the last report of the page before (its created_at in
	// microseconds and its id), so a page is the same whatever is decided
	// meanwhile, and every pending report can be reached.
	q := core.PendingQuery{Limit: queuePage}
	if after := c.QueryParam("after"); after != "" {
		var ok bool
		if q.AfterCreatedAt, q.AfterID, ok = parseCursor(after); !ok {
			return s.errorPage(c, http.StatusBadRequest, "This page of the review queue does not exist: start again from the first page.")
		}
	}
	pending, total, err := s.store.ListPending(ctx, q)
	if err != nil {
		return err
	}
	next := ""
	if len(pending) == queuePage {
		last := pending[len(pending)-1]
		next = cursor(last.CreatedAt, last.ID)
	}
	revs, err := s.store.ListPendingRevisions(ctx)
	if err != nil {
		return err
	}
	type pendingRevision struct {
		revisionView
		Threat core.Threat
	}
	// The revisions' reports in one storage call.
	var ids []string
	for _, r := range revs {
		if !slices.Contains(ids, r.ThreatID) {
			ids = append(ids, r.ThreatID)
		}
	}
	byID := map[string]core.Threat{}
	for chunk := range slices.Chunk(ids, core.MaxGetThreats) {
		ts, err := s.store.GetThreats(ctx, chunk)
		if err != nil {
			return err
		}
		for _, t := range ts {
			byID[t.ID] = t
		}
	}
	var prs []pendingRevision
	for _, r := range revs {
		t := byID[r.ThreatID]
		prs = append(prs, pendingRevision{revisionOf(t, r), t})
	}
	// Each submitter's record, in one storage call.
	var submitters []string
	for _, t := range pending {
		if t.SubmitterID != "" && !slices.Contains(submitters, t.SubmitterID) {
			submitters = append(submitters, t.SubmitterID)
		}
	}
	records := map[string]core.SubmitterRecord{}
	if len(submitters) > 0 {
		recs, err := s.store.SubmitterRecords(ctx, submitters)
		if err != nil {
			return err
		}
		for _, r := range recs {
			records[r.UserID] = r
		}
	}
	views := make([]map[string]any, len(pending))
	for i, t := range pending {
		rec, known := records[t.SubmitterID]
		views[i] = map[string]any{"T": t, "Payload": s.markdown(t.Details.PayloadDescription), "Evidence": splitPipes(t.Details.EvidenceReferences),
			"IOCs": core.ExtractIOCs(t), "Versions": core.AffectedVersions(t), "Submitter": rec, "KnownSubmitter": known}
	}
	return s.render(c, http.StatusOK, "queue", map[string]any{"Title": "Review queue", "Pending": views, "Revisions": prs,
		"PendingTotal": total, "NextPage": next, "Paged": q.AfterID != ""})
}

// decide is Verify or Reject on a pending (or, to withdraw, verified)
// report, pinned to the version the reviewer saw.
func (s *Site) decide(c *echo.Context) error {
	ctx := c.Request().Context()
	f, _ := c.FormValues()
	var d core.Decision
	switch f.Get("decision") {
	case "verify":
		d = core.DecisionVerify
	case "reject":
		d = core.DecisionReject
	default:
		return s.errorPage(c, http.StatusBadRequest, "decision: must be verify or reject")
	}
	version, err := strconv.Atoi(f.Get("version"))
	if err != nil || version < 1 {
		return s.errorPage(c, http.StatusBadRequest, "version: the form did not say which version you reviewed")
	}
	u := viewerOf(c).User
	t, err := s.reports.Decide(ctx, c.Param("id"), version, d, strings.TrimSpace(f.Get("note")), &u)
	if err != nil {
		return s.decisionError(c, err)
	}
	if err := s.sync(ctx); err != nil {
		s.log.Warn("web: the decision will show within cache.freshness", "error", err.Error())
	}
	s.setFlash(c, "ok", fmt.Sprintf("Done: %s %s is %s.", t.ReportType, t.ResourceIdentifier, t.Status))
	return c.Redirect(http.StatusSeeOther, "/review")
}

func (s *Site) decideRevision(c *echo.Context) error {
	ctx := c.Request().Context()
	f, _ := c.FormValues()
	approve := f.Get("decision") == "approve"
	if !approve && f.Get("decision") != "reject" {
		return s.errorPage(c, http.StatusBadRequest, "decision: must be approve or reject")
	}
	u := viewerOf(c).User
	_, r, err := s.reports.DecideRevision(ctx, c.Param("id"), approve, strings.TrimSpace(f.Get("note")), &u)
	if err != nil {
		return s.decisionError(c, err)
	}
	if err := s.sync(ctx); err != nil {
		s.log.Warn("web: the decision will show within cache.freshness", "error", err.Error())
	}
	s.setFlash(c, "ok", fmt.Sprintf("Done: revision %d is %s.", r.Number, r.State))
	return c.Redirect(http.StatusSeeOther, "/review")
}

// decisionError sends the reviewer back to the queue with the reason.
func (s *Site) decisionError(c *echo.Context, err error) error {
	var fe *core.FieldError
	switch {
	case errors.As(err, &fe), errors.Is(err, core.ErrConflict), errors.Is(err, core.ErrStale), errors.Is(err, core.ErrNotFound), errors.Is(err, core.ErrForbidden):
		s.setFlash(c, "error", "Not done: "+err.Error())
		return c.Redirect(http.StatusSeeOther, "/review")
	}
	return err
}

// markdownHTML marks sanitised HTML as safe for the templates.
func markdownHTML(s string) template.HTML { return template.HTML(s) } //nolint:gosec // sanitised by bluemonday

// firewallBlocks lists the registry firewall's latest refusals on this daemon.
func (s *Site) firewallBlocks(c *echo.Context) error {
	if s.opts.FirewallBlocks == nil {
		return s.errorPage(c, http.StatusNotFound, "The registry firewall is turned off (firewall.enabled).")
	}
	events, total := s.opts.FirewallBlocks.List()
	return s.render(c, http.StatusOK, "firewall", map[string]any{"Title": "Firewall blocks", "Events": events, "Total": total})
}
