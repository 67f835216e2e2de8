package storagetest

import (
	"context"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/port"
)

// Reporter is a user of a store who submits reports through core's use
// cases and has them verified by the built-in reviewer, as the daemon
// does: for tests of the layers above storage (the index, the firewall,
// the MISP feed).
type Reporter struct {
	Reports   *core.Reports
	Principal core.Principal
	// Token is the user's API token.
	Token string
}

// NewReporter adds the user email to st with a token.
func NewReporter(t testing.TB, st port.Store, email string) *Reporter {
	t.Helper()
	ctx := context.Background()
	acc := core.NewAccounts(st)
	if _, err := acc.AddUser(ctx, core.NewUser{Email: email}); err != nil {
		t.Fatal(err)
	}
	secret, _, err := acc.IssueToken(ctx, email, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := acc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	return &Reporter{Reports: core.NewReports(st, core.Limits{}), Principal: p, Token: secret}
}

// Verified submits a package report of name in registry naming versions
// ("" = every version) and verifies it.
func (r *Reporter) Verified(t testing.TB, registry, name, versions string) core.Threat {
	t.Helper()
	ctx := context.Background()
	typ, desc := string(core.TypePackage), "Steals credentials at install time"
	s := core.Submission{ReportType: &typ, ResourceIdentifier: &name, Registry: &registry, ThreatDescription: &desc}
	if versions != "" {
		s.VersionInfo = &versions
	}
	th, err := r.Reports.Submit(ctx, r.Principal, s)
	if err != nil {
		t.Fatal(err)
	}
	th, err = r.Reports.Decide(ctx, th.ID, 0, core.DecisionVerify, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return th
}
