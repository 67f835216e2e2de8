package plugins

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/storage"
)

// TestErrorsCrossTyped checks that every domain error survives the trip
// through a gRPC status with its type and details.
func TestErrorsCrossTyped(t *testing.T) {
	cases := []struct {
		in    error
		check func(error) bool
	}{
		{core.Invalid("registry", "is required"), func(e error) bool {
			var fe *core.FieldError
			return errors.As(e, &fe) && fe.Field == "registry" && fe.Message == "is required"
		}},
		{&core.ConflictError{What: "threat", Key: "npm:lodash", Meta: map[string]string{"id": "abc", "status": "verified"}}, func(e error) bool {
			var ce *core.ConflictError
			return errors.As(e, &ce) && ce.What == "threat" && ce.Key == "npm:lodash" && ce.Meta["id"] == "abc" && ce.Meta["status"] == "verified"
		}},
		{fmt.Errorf("wrapped: %w", core.NotFound("user", "a@b.c")), func(e error) bool {
			var ne *core.NotFoundError
			return errors.As(e, &ne) && ne.What == "user" && ne.Key == "a@b.c"
		}},
		{fmt.Errorf("hourly: %w", core.ErrLimit), func(e error) bool { return errors.Is(e, core.ErrLimit) }},
		{fmt.Errorf("db down: %w", core.ErrUnavailable), func(e error) bool { return errors.Is(e, core.ErrUnavailable) }},
		{context.DeadlineExceeded, func(e error) bool { return errors.Is(e, context.DeadlineExceeded) }},
		{&core.NewUserCapError{Verified: 1, Unverified: 3, MaxUnverified: 3, VerifiedToLift: 3}, func(e error) bool {
			var c *core.NewUserCapError
			return errors.As(e, &c) && *c == core.NewUserCapError{Verified: 1, Unverified: 3, MaxUnverified: 3, VerifiedToLift: 3} && errors.Is(e, core.ErrForbidden)
		}},
		{&core.HourlyLimitError{Limit: 10, RetryAfter: 90 * time.Second}, func(e error) bool {
			var h *core.HourlyLimitError
			return errors.As(e, &h) && h.Limit == 10 && h.RetryAfter == 90*time.Second && errors.Is(e, core.ErrLimit)
		}},
		{&core.StepError{Step: core.StepInsertDetails, Err: errors.New("FOREIGN KEY constraint failed")}, func(e error) bool {
			var s *core.StepError
			return errors.As(e, &s) && s.Step == core.StepInsertDetails && s.Error() == "FOREIGN KEY constraint failed"
		}},
		{errors.New("disk I/O error"), func(e error) bool {
			return e.Error() == "disk I/O error" && !errors.Is(e, core.ErrNotFound) && !errors.Is(e, core.ErrConflict)
		}},
	}
	for _, c := range cases {
		out := fromStatus(toStatus(c.in))
		if !c.check(out) {
			t.Errorf("%v crossed as %#v", c.in, out)
		}
	}
	if fromStatus(toStatus(nil)) != nil {
		t.Error("nil error did not stay nil")
	}
}

// TestStorageShim runs the real SQLite store behind the real gRPC shims
// in-process (go-plugin's TestPluginGRPCConn).
func TestStorageShim(t *testing.T) {
	dir := t.TempDir()
	p := StoragePlugin("sqlite", func(_ context.Context, cfg StorageConfig) (port.Store, error) {
		return storage.Open(storage.SQLite, cfg.DSN, storage.Options{})
	})
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{KindStorage: p})
	defer client.Close()
	defer server.Stop()
	raw, err := client.Dispense(KindStorage)
	if err != nil {
		t.Fatal(err)
	}
	sc := raw.(*StorageClient)
	ctx := context.Background()
	if _, err := sc.Migrate(ctx); err == nil {
		t.Fatal("a call before Configure must fail")
	}
	if name, err := sc.Configure(ctx, StorageConfig{DSN: filepath.Join(dir, "shim.db")}); err != nil || name != "sqlite" {
		t.Fatalf("configure: %q %v", name, err)
	}
	if _, err := sc.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	limit := 42
	u := core.User{ID: uuid.NewString(), Email: "x@example.com", Name: "x", Tier: core.TierFree, Role: core.RoleAdmin, SubmissionsPerHour: &limit}
	got, err := sc.CreateUser(ctx, u)
	if err != nil || got.SubmissionsPerHour == nil || *got.SubmissionsPerHour != 42 || got.Role != core.RoleAdmin || got.CreatedAt.IsZero() {
		t.Fatalf("create user across the shim: %+v %v", got, err)
	}
	if _, err := sc.CreateUser(ctx, u); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("duplicate across the shim: %v", err)
	}
	if _, err := sc.UserByEmail(ctx, "nobody@example.com"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("not found across the shim: %v", err)
	}
}

// A patch crosses the protocol as it is: a cleared list stays cleared
// (not "no change"), an absent one absent, and an empty patch empty.
func TestPatchCrosses(t *testing.T) {
	sev, add := "high", "https://blog.example/more"
	in := core.Patch{Submission: core.Submission{SeverityLevel: &sev, Tags: []string{}}, EvidenceReferencesAdd: &add}
	out := patchFromPB(patchToPB(in))
	if out.SeverityLevel == nil || *out.SeverityLevel != "high" || out.Tags == nil || len(out.Tags) != 0 || out.Contributors != nil ||
		out.EvidenceReferencesAdd == nil || *out.EvidenceReferencesAdd != add {
		t.Fatalf("round trip: %+v", out)
	}
	if empty := patchFromPB(patchToPB(core.Patch{})); !core.PatchIsEmpty(empty) {
		t.Fatalf("an empty patch: %+v", empty)
	}
}
