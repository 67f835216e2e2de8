package web

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/record"
	"github.com/threatd/threatd/core/taxii"
)

func (s *Site) indexReady() bool {
	ready, _, _ := s.index.Progress()
	return ready
}

const pageSize = 25

// submissions is My submissions: the viewer's reports, newest first.
func (s *Site) submissions(c *echo.Context) error {
	page, _ := strconv.Atoi(c.QueryParam("page"))
	page = max(page, 1)
	v := viewerOf(c)
	sl, err := s.store.ListSubmissions(c.Request().Context(), core.SubmissionQuery{UserID: v.User.ID, Offset: (page - 1) * pageSize, Limit: pageSize})
	list, total := sl.Threats, sl.Total
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
	if rest, ok := strings.CutPrefix(id, "threat_id_"); ok && !asJSON {
		// The link npm audit prints (npm hides a free-standing UUID as
		// ***, not one joined to a word).
		if u, err := uuid.Parse(rest); err == nil {
			return c.Redirect(http.StatusMovedPermanently, "/threats/"+u.String())
		}
	}
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
		return c.JSON(http.StatusOK, record.Public(t, core.CommunityOf(s.opts.Community, t)))
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
		"IOCs": t.IOCs, "Events": events, "Revisions": revisionViews(t, revs),
		"Owner": owner, "ShowContact": t.Details.ContactEmail != "", "Imported": t.Source == core.OSVSource,
	}
	if an, err := s.analysesOf(ctx, []string{t.ID}); err != nil {
		return err
	} else if a, ok := an[t.ID]; ok {
		data["Analysis"] = a
	}
	if t.Status == core.StatusVerified {
		data["Links"] = s.threatLinks(t)
		data["Community"] = core.CommunityOf(s.opts.Community, t)
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
	all := taxii.Collections()[0]
	links = append(links, threatLink{Name: "STIX", URL: "/taxii2/api/collections/" + all.ID + "/objects/" + t.STIXIDs().Malware() + "/",
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

// queuePage is how many pending reports one page of the review queue shows.
const queuePage = 50

// markdownHTML marks sanitised HTML as safe for the templates.
func markdownHTML(s string) template.HTML { return template.HTML(s) } //nolint:gosec // sanitised by bluemonday
