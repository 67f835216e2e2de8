package storage

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// Migration 0009 rewrites revision patches stored before core.Submission's
// JSON became the stored form: a "cleared" list of emptied fields becomes
// the [] values themselves, on both dialects.
func TestPatchMigrationRewritesClearedLists(t *testing.T) {
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := openMigrated(t, d)
			u, err := s.CreateUser(ctx, core.User{ID: uuid.NewString(), Email: "p@example.com", Name: "p", Tier: core.TierFree, Role: core.RoleSubmitter})
			if err != nil {
				t.Fatal(err)
			}
			th, err := core.NewThreat(core.Submission{ReportType: ptrS("domain"), ResourceIdentifier: ptrS("patch.example"), ThreatDescription: ptrS("x")}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			th.ID, th.SubmitterID, th.Status = uuid.NewString(), u.ID, core.StatusPending
			th.CreatedAt, th.UpdatedAt = time.Now().UTC(), time.Now().UTC()
			if err := s.CreateThreat(ctx, core.SubmittedThreat{Threat: th, Policy: core.SubmitPolicy{Now: time.Now()}}); err != nil {
				t.Fatal(err)
			}
			legacy := map[string]string{
				"both":  `{"severity_level":"high","tags":null,"cleared":["tags","contributors"]}`,
				"tags":  `{"publisher":"x","cleared":["tags"]}`,
				"plain": `{"publisher":"y"}`,
			}
			n := 0
			for _, k := range []string{"both", "tags", "plain"} {
				n++
				if _, err := s.db.NewRaw(`INSERT INTO threat_revisions (id, threat_id, number, author_name, state, changes, created_at) VALUES (?, ?, ?, 'old', 'pending', ?, ?)`,
					uuid.NewString(), th.ID, n, legacy[k], time.Now().UTC()).Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// Migration 0009 again, as bun's migrator runs it.
			runMigration(t, s, "0009")
			revs, err := s.ListRevisions(ctx, th.ID)
			if err != nil || len(revs) != 3 {
				t.Fatalf("revisions: %d %v", len(revs), err)
			}
			both, tags, plain := revs[0].Patch, revs[1].Patch, revs[2].Patch
			if both.Tags == nil || len(both.Tags) != 0 || both.Contributors == nil || len(both.Contributors) != 0 || *both.SeverityLevel != "high" {
				t.Errorf("both: %+v", both)
			}
			if tags.Tags == nil || tags.Contributors != nil || *tags.Publisher != "x" {
				t.Errorf("tags: %+v", tags)
			}
			if plain.Tags != nil || plain.Contributors != nil || *plain.Publisher != "y" {
				t.Errorf("plain: %+v", plain)
			}
			if f := core.PatchFields(both); !slices.Equal(f, []string{"severity_level", "tags", "contributors"}) {
				t.Errorf("fields %v", f)
			}
			var stored []string
			if err := s.db.NewRaw(`SELECT changes FROM threat_revisions ORDER BY number`).Scan(ctx, &stored); err != nil {
				t.Fatal(err)
			}
			for _, c := range stored {
				if strings.Contains(c, "cleared") {
					t.Errorf("still stored with cleared: %s", c)
				}
			}
		})
	}
}

func ptrS(s string) *string { return &s }

// importedPackage is an npm report named name as an import from source
// brings it (under upstreamID), for the migrations' tests to store the
// way an earlier version did.
func importedPackage(t *testing.T, name, source, upstreamID string) core.ImportRecord {
	t.Helper()
	th, err := core.NewThreat(core.Submission{ReportType: ptrS("package"), Registry: ptrS("npm"), ResourceIdentifier: &name, ThreatDescription: ptrS("x")}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	th.Source, th.UpstreamID = source, upstreamID
	return core.ImportRecord{Threat: th}
}
