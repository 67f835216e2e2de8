package plugins

import (
	"reflect"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

// roundTrip sends v to the wire and back and wants it unchanged. Every
// field of v must be set, so that a field added to a request or reply
// struct without its converters fails here until the sample sets it.
func roundTrip[T, P any](t *testing.T, v T, to func(T) P, from func(P) T) {
	t.Helper()
	name := reflect.TypeOf(v).String()
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Struct {
		for i := range rv.NumField() {
			if rv.Field(i).IsZero() {
				t.Errorf("%s: the sample leaves %s unset", name, rv.Type().Field(i).Name)
			}
		}
	}
	if got := from(to(v)); !reflect.DeepEqual(got, v) {
		t.Errorf("%s changed crossing the plugin:\n got %+v\nwant %+v", name, got, v)
	}
}

// TestPortStructsCrossThePlugin: every request and reply struct of the
// storage port survives its pair of converters.
func TestPortStructsCrossThePlugin(t *testing.T) {
	at := time.Date(2026, 11, 25, 1, 2, 3, 4000, time.UTC)
	n, tier, role := 7, core.TierPaid, core.RoleAdmin
	user := core.User{ID: "u1", Email: "a@example.org", Name: "A", Tier: core.TierFree, Role: core.RoleSubmitter, CreatedAt: at}
	token := core.Token{ID: "t1", UserID: "u1", Name: "ci", Hash: "h", Hint: "thd_…abcd", CreatedAt: at}
	threat := core.Threat{ID: "th1", ReportType: core.TypeDomain, ResourceIdentifier: "evil.example", CanonicalKey: "domain:evil.example",
		Status: core.StatusPending, CreatedAt: at, UpdatedAt: at, Version: 1, Details: core.Details{ThreatDescription: "d", Tags: []string{"a"}, Contributors: []string{"c"}}}
	policy := core.SubmitPolicy{MaxUnverified: 1, VerifiedToLift: 2, HourlyLimit: 3, Now: at}
	iocs := []ioc.IOC{{Type: ioc.Domain, Value: "evil.example", Origin: ioc.OriginPayload, Confidence: ioc.ConfidenceHigh}}
	attempt := core.DeliveryAttempt{WebhookID: "w", Seq: 9, ThreatID: "th1", Kind: "published", At: at, Status: 502,
		Latency: 3 * time.Millisecond, Error: "bad gateway", State: "retry"}

	roundTrip(t, core.UserLimit{Email: "a@example.org", PerHour: &n}, userLimitToPB, userLimitFromPB)
	roundTrip(t, core.UserAccess{Email: "a@example.org", Tier: &tier, Role: &role}, userAccessToPB, userAccessFromPB)
	roundTrip(t, core.UserQuery{After: "a@example.org", Limit: 10}, userQueryToPB, userQueryFromPB)
	roundTrip(t, []core.User{user}, usersToPB, usersFromPB)
	roundTrip(t, core.UserToken{UserID: "u1", TokenID: "t1"}, userTokenToPB, userTokenFromPB)
	roundTrip(t, core.PasswordReset{Email: "a@example.org", Hash: "$argon2id$x"}, passwordResetToPB, passwordResetFromPB)
	roundTrip(t, core.TokenOwner{Token: token, User: user}, tokenOwnerToPB, tokenOwnerFromPB)
	roundTrip(t, core.SessionOwner{Session: core.Session{Hash: "s", UserID: "u1", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}, User: user},
		sessionOwnerToPB, sessionOwnerFromPB)
	roundTrip(t, map[string]time.Time{"t1": at}, tokensUsedToPB, tokensUsedFromPB)

	roundTrip(t, core.SubmittedThreat{Threat: threat, Policy: policy}, submittedToPB, submittedFromPB)
	roundTrip(t, core.SubmissionQuery{UserID: "u1", Offset: 20, Limit: 10}, submissionQueryToPB, submissionQueryFromPB)
	roundTrip(t, core.ThreatList{Threats: []core.Threat{threat}, Total: 31}, threatListToPB, threatListFromPB)
	roundTrip(t, core.PendingQuery{AfterCreatedAt: at, AfterID: "th1", Limit: 50}, pendingQueryToPB, pendingQueryFromPB)
	publisher := "someone"
	roundTrip(t, core.Modification{ThreatID: "th1", AuthorID: "u1", AuthorName: "A", Patch: core.Patch{Submission: core.Submission{Publisher: &publisher}},
		BaseRevision: 2, At: at, Version: 3, IOCs: iocs, Policy: policy}, modificationToPB, func(r *pb.ModifyRequest) core.Modification {
		m, err := modificationFromPB(r)
		if err != nil {
			t.Fatal(err)
		}
		return m
	})
	roundTrip(t, core.RevisionDecision{RevisionID: "r1", Approve: true, Note: "ok", ActorID: "u2", ActorName: "R", At: at, Version: 3, IOCs: iocs},
		decisionToPB, decisionFromPB)
	roundTrip(t, []core.SubmitterRecord{{UserID: "u1", Name: "A", Verified: 1, Rejected: 2, Pending: 3}}, submitterRecordsToPB, submitterRecordsFromPB)

	roundTrip(t, core.LatestFilter{ReportType: core.TypePackage, Registry: "npm", Severity: core.SeverityHigh, Limit: 20}, latestFilterToPB, latestFilterFromPB)
	roundTrip(t, core.KeyPrefixQuery{Prefixes: []string{"package:npm:lod"}, After: "package:npm:loda", Limit: 21}, keyPrefixQueryToPB, keyPrefixQueryFromPB)
	roundTrip(t, core.ChangeQuery{After: 41, Limit: 1000}, changeQueryToPB, changeQueryFromPB)

	roundTrip(t, core.ImportBatch{Records: []core.ImportRecord{{Threat: threat, Withdrawn: true}}, Actor: "osv-import"}, importBatchToPB, importBatchFromPB)
	roundTrip(t, []core.ImportOutcome{{UpstreamID: "MAL-1", Result: core.ImportSkipped, ThreatID: "th1", Reason: "why"}}, outcomesToPB, outcomesFromPB)
	roundTrip(t, core.VersionQuery{Source: "osv", IDs: []string{"MAL-1"}}, versionQueryToPB, versionQueryFromPB)

	roundTrip(t, core.LeaseClaim{Name: "push", Holder: "host-1", TTL: 30 * time.Second}, leaseClaimToPB, leaseClaimFromPB)
	roundTrip(t, core.UsageQuery{TokenID: "t1", Day: "2026-11-25"}, usageQueryToPB, usageQueryFromPB)
	roundTrip(t, []core.UsageDelta{{Day: "2026-11-25", TokenID: "t1", Endpoint: "threat-feed", Calls: 4}}, usageDeltasToPB, usageDeltasFromPB)
	roundTrip(t, core.RateCounts{Window: 29_000_000, Counts: map[string]int64{"ip:192.0.2.1": 3}}, rateCountsToPB, rateCountsFromPB)
	roundTrip(t, core.Stats{Users: 1, Tokens: 2, Threats: 3, LastSeq: 4}, statsToPB, statsFromPB)

	roundTrip(t, core.DueQuery{Now: at, Limit: 100, Except: []string{"a", "b"}}, dueQueryToPB, dueQueryFromPB)
	roundTrip(t, core.AttemptQuery{WebhookID: "w", Limit: 10}, attemptQueryToPB, attemptQueryFromPB)
	roundTrip(t, core.WebhookTrim{MaxPending: 1000, FinishedBefore: at}, webhookTrimToPB, webhookTrimFromPB)
	roundTrip(t, core.AttemptOutcome{Attempt: attempt, NextAt: at, Payload: []byte("{}"), Disable: "gone"}, attemptOutcomeToPB, attemptOutcomeFromPB)
	roundTrip(t, core.WebhookQueue{Pending: 5, Oldest: at}, webhookQueueToPB, webhookQueueFromPB)
}
