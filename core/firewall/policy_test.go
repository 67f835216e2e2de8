package firewall

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// served are the registries the policies of these tests serve.
var served = []string{core.RegistryNPM, core.RegistryPyPI, core.RegistryGo}

// matcher answers from a fixed map of canonical key → reports.
type matcher map[string][]core.Threat

func (m matcher) Matches(_ context.Context, keys []string, _ string) ([]core.Threat, error) {
	var out []core.Threat
	for _, k := range keys {
		out = append(out, m[k]...)
	}
	return out, nil
}

func report(id, versions string, all bool) core.Threat {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	return core.Threat{ID: id, Status: core.StatusVerified, VerifiedAt: &at, AllVersions: all, Details: core.Details{VersionInfo: versions}}
}

func TestGlobs(t *testing.T) {
	for _, c := range []struct {
		glob, name string
		want       bool
	}{
		{"@acme/*", "@acme/internal", true},
		{"@acme/*", "@ACME/Internal", true},
		{"@acme/*", "@acmex/internal", false},
		{"corp-*", "corp-tools", true},
		{"corp-?", "corp-ab", false},
		{"*", "anything/at/all", true},
		{"git.corp.example/*", "git.corp.example/team/repo/v2", true},
	} {
		if got := globMatch(foldName("npm", c.glob), foldName("npm", c.name)); got != c.want {
			t.Errorf("%q ~ %q = %v, want %v", c.glob, c.name, got, c.want)
		}
	}
	p, err := NewPolicy(matcher{}, map[string][]string{"pypi": {"Corp_Tools"}, "go": {"corp.example/*"}}, served)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Private("pypi", "corp.tools") || p.Private("pypi", "corp-tool") || !p.Private("go", "corp.example/x/y") || p.Private("go", "Corp.example/x") {
		t.Fatal("private names are folded per registry (PEP 503 for PyPI, exact for Go)")
	}
	if _, err := NewPolicy(matcher{}, map[string][]string{"maven": {"x"}}, served); err == nil || !strings.Contains(err.Error(), "maven") {
		t.Fatalf("a registry the firewall does not serve: %v", err)
	}
}

func TestVerdicts(t *testing.T) {
	m := matcher{
		"package:npm:evil":              {report("a", "1.0.1, 1.0.2", false)},
		"package:npm:@acme/internal":    {report("b", "", false)},
		"package:npm:everything":        {report("c", "", false)},
		"package:npm:osv":               {report("d", "0.1.0", true)},
		"package:go:example.com/module": {report("e", "1.0.1", false), report("f", "v2.0.0", false)},
	}
	p, err := NewPolicy(m, map[string][]string{"npm": {"@acme/*"}}, served)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	look := func(reg, name string) Verdict {
		v, err := p.Lookup(ctx, reg, name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := look("npm", "Evil"); v.Check("1.0.0") != nil || v.Check("1.0.2") == nil || v.Clean() || len(v.BlocksEvery()) != 0 {
		t.Fatal("npm: listed versions only, the name case-insensitively")
	}
	if v := look("npm", "@acme/internal"); !v.Private || !v.Clean() || v.Check("1.0.0") != nil {
		t.Fatal("a private name is never blocked")
	}
	if v := look("npm", "everything"); len(v.BlocksEvery()) != 1 || v.Check("9.9.9") == nil {
		t.Fatal("an empty version_info blocks every version")
	}
	if v := look("npm", "osv"); len(v.BlocksEvery()) != 1 || v.Check("5.0.0") == nil {
		t.Fatal("an OSV record affecting all versions blocks every version")
	}
	v := look("go", "example.com/module")
	for ver, want := range map[string]string{"v1.0.1": "e", "1.0.1": "e", "v2.0.0": "f", "2.0.0": "f", "v1.0.0": ""} {
		b := v.Check(ver)
		if (b == nil) != (want == "") || b != nil && b.ThreatIDs()[0] != want {
			t.Errorf("go %s: %+v, want %q", ver, b, want)
		}
	}
	// A name the registry would not accept cannot be judged: refused, never
	// a clean verdict (the upstream might read it as another name).
	var u *Unjudgeable
	if _, err := p.Lookup(ctx, "npm", "not a name!"); !errors.As(err, &u) || u.Registry != "npm" || u.What != "package name" {
		t.Fatalf("an invalid name: %v, want an *Unjudgeable", err)
	}
	// A revision of the version list changes the fingerprint (cached
	// renderings are keyed by it), though the report and its verification
	// time stay the same.
	before := look("npm", "evil").Fingerprint()
	m["package:npm:evil"] = []core.Threat{report("a", "1.0.1, 1.0.2, 1.0.3", false)}
	if look("npm", "evil").Fingerprint() == before {
		t.Fatal("a revised version list kept the fingerprint")
	}
	b := look("npm", "evil").Check("1.0.1")
	if msg := b.Message(); msg != "Blocked by threatd: npm evil@1.0.1 is malicious (threat_id_a)" {
		t.Fatalf("message %q", msg)
	}
}

func TestRecent(t *testing.T) {
	r := NewRecent(3)
	for i := range 5 {
		r.Add(Event{Name: string(rune('a' + i))})
	}
	got, total := r.List()
	if total != 5 || len(got) != 3 || got[0].Name != "e" || got[2].Name != "c" {
		t.Fatalf("%d %+v", total, got)
	}
}

// campaigns says what the community says of reports: their campaigns.
type campaigns map[string][]core.CampaignRef

func (c campaigns) OfThreat(t core.Threat) core.Community {
	return core.Community{Campaigns: c[t.ID]}
}

// A refusal names the campaigns of its reports, each once, after their ids.
func TestRefusalNamesCampaigns(t *testing.T) {
	p, err := NewPolicy(matcher{}, nil, served)
	if err != nil {
		t.Fatal(err)
	}
	worm := core.CampaignRef{ID: "c1", Name: "Shai-Hulud"}
	p.SetCommunity(campaigns{"a": {worm}, "b": {worm, {ID: "c2", Name: "Second wave"}}})
	b := p.Blocked(core.RegistryNPM, "evil", "1.0.1", []core.Threat{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	want := "Blocked by threatd: npm evil@1.0.1 is malicious (threat_id_a, threat_id_b, threat_id_c); campaign: Shai-Hulud, Second wave"
	if msg := b.Message(); msg != want {
		t.Fatalf("message %q, want %q", msg, want)
	}
	if msg := p.Blocked(core.RegistryNPM, "evil", "1.0.1", []core.Threat{{ID: "c"}}).Message(); strings.Contains(msg, "campaign") {
		t.Fatalf("a report in no campaign: %q", msg)
	}
}
