package storage

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// Migration 0029 attributes the reports imported before source users to
// their source's user (created once, the same one an import then finds),
// leaves a community report a source was attached to with its submitter,
// and changes nothing run again; on both dialects.
func TestSourceUsersMigration(t *testing.T) {
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := openMigrated(t, d)
			person := core.User{ID: uuid.NewString(), Email: "person@example.com", Name: "person", Tier: core.TierFree, Role: core.RoleSubmitter}
			if _, err := s.CreateUser(ctx, person); err != nil {
				t.Fatal(err)
			}
			var recs []core.ImportRecord
			for i, source := range []string{"osv", "osv", "urlhaus"} {
				recs = append(recs, importedPackage(t, fmt.Sprintf("old-import-%d", i), source, fmt.Sprintf("U-%d", i)))
			}
			// Imported as before this version: no submitter.
			out, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs, Actor: "osv-import"})
			if err != nil {
				t.Fatal(err)
			}
			// A person's report a source was attached to.
			if _, err := s.db.NewUpdate().Table("threats").Set("submitter_id = ?", person.ID).Where("id = ?", out[1].ThreatID).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := attributeImports(ctx, s.db); err != nil {
					t.Fatal(err)
				}
			}
			osv, err := core.SourceUser(ctx, s, "osv")
			if err != nil {
				t.Fatal(err)
			}
			urlhaus, err := s.UserByEmail(ctx, core.SourceUserEmail("urlhaus"))
			if err != nil || urlhaus.Name != "urlhaus" {
				t.Fatalf("urlhaus's user: %+v %v", urlhaus, err)
			}
			for i, want := range []string{osv.ID, person.ID, urlhaus.ID} {
				th, err := s.GetThreat(ctx, out[i].ThreatID)
				if err != nil || th.SubmitterID != want {
					t.Fatalf("report %d: submitter %q, want %q (%v)", i, th.SubmitterID, want, err)
				}
			}
			users, err := s.ListUsers(ctx, core.UserQuery{Limit: 10})
			if err != nil || len(users) != 3 {
				t.Fatalf("%d users after two runs, want 3: %v", len(users), err)
			}
		})
	}
}
