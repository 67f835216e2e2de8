// The storage port's request and reply structs on the wire: one pair of
// converters per struct (convert_port_test.go sends each through both).

package plugins

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

// Accounts.

func userLimitToPB(l core.UserLimit) *pb.SetUserLimitRequest {
	return &pb.SetUserLimitRequest{Email: l.Email, SubmissionsPerHour: intPtr32(l.PerHour)}
}

func userLimitFromPB(r *pb.SetUserLimitRequest) core.UserLimit {
	return core.UserLimit{Email: r.Email, PerHour: int32Ptr(r.SubmissionsPerHour)}
}

func userAccessToPB(a core.UserAccess) *pb.SetUserAccessRequest {
	r := &pb.SetUserAccessRequest{Email: a.Email}
	if a.Tier != nil {
		r.Tier = proto.String(string(*a.Tier))
	}
	if a.Role != nil {
		r.Role = proto.String(string(*a.Role))
	}
	return r
}

func userAccessFromPB(r *pb.SetUserAccessRequest) core.UserAccess {
	a := core.UserAccess{Email: r.Email}
	if r.Tier != nil {
		t := core.Tier(*r.Tier)
		a.Tier = &t
	}
	if r.Role != nil {
		role := core.Role(*r.Role)
		a.Role = &role
	}
	return a
}

func userQueryToPB(q core.UserQuery) *pb.ListUsersRequest {
	return &pb.ListUsersRequest{After: q.After, Limit: int32(q.Limit)}
}

func userQueryFromPB(r *pb.ListUsersRequest) core.UserQuery {
	return core.UserQuery{After: r.After, Limit: int(r.Limit)}
}

func usersToPB(us []core.User) *pb.ListUsersResponse {
	return &pb.ListUsersResponse{Users: each(us, userToPB)}
}

func usersFromPB(r *pb.ListUsersResponse) []core.User { return each(r.Users, userFromPB) }

func userTokenToPB(t core.UserToken) *pb.RevokeUserTokenRequest {
	return &pb.RevokeUserTokenRequest{UserId: t.UserID, TokenId: t.TokenID}
}

func userTokenFromPB(r *pb.RevokeUserTokenRequest) core.UserToken {
	return core.UserToken{UserID: r.UserId, TokenID: r.TokenId}
}

func passwordResetToPB(p core.PasswordReset) *pb.SetPasswordRequest {
	return &pb.SetPasswordRequest{Email: p.Email, Hash: p.Hash}
}

func passwordResetFromPB(r *pb.SetPasswordRequest) core.PasswordReset {
	return core.PasswordReset{Email: r.Email, Hash: r.Hash}
}

func tokenOwnerToPB(o core.TokenOwner) *pb.AuthenticateResponse {
	return &pb.AuthenticateResponse{Token: tokenToPB(o.Token), User: userToPB(o.User)}
}

func tokenOwnerFromPB(r *pb.AuthenticateResponse) core.TokenOwner {
	return core.TokenOwner{Token: tokenFromPB(r.Token), User: userFromPB(r.User)}
}

func sessionOwnerToPB(o core.SessionOwner) *pb.SessionUserResponse {
	return &pb.SessionUserResponse{Session: sessionToPB(o.Session), User: userToPB(o.User)}
}

func sessionOwnerFromPB(r *pb.SessionUserResponse) core.SessionOwner {
	return core.SessionOwner{Session: sessionFromPB(r.Session), User: userFromPB(r.User)}
}

func tokensUsedToPB(used map[string]time.Time) *pb.TokensUsedRequest {
	r := &pb.TokensUsedRequest{Used: make(map[string]*timestamppb.Timestamp, len(used))}
	for id, at := range used {
		r.Used[id] = ts(at)
	}
	return r
}

func tokensUsedFromPB(r *pb.TokensUsedRequest) map[string]time.Time {
	used := make(map[string]time.Time, len(r.Used))
	for id, at := range r.Used {
		used[id] = fromTS(at)
	}
	return used
}

// Reports.

func submittedToPB(s core.SubmittedThreat) *pb.CreateThreatRequest {
	return &pb.CreateThreatRequest{Threat: threatToPB(s.Threat), Policy: policyToPB(s.Policy)}
}

func submittedFromPB(r *pb.CreateThreatRequest) core.SubmittedThreat {
	return core.SubmittedThreat{Threat: threatFromPB(r.Threat), Policy: policyFromPB(r.Policy)}
}

func submissionQueryToPB(q core.SubmissionQuery) *pb.ListSubmissionsRequest {
	return &pb.ListSubmissionsRequest{UserId: q.UserID, Offset: int32(q.Offset), Limit: int32(q.Limit)}
}

func submissionQueryFromPB(r *pb.ListSubmissionsRequest) core.SubmissionQuery {
	return core.SubmissionQuery{UserID: r.UserId, Offset: int(r.Offset), Limit: int(r.Limit)}
}

func threatListToPB(l core.ThreatList) *pb.ListSubmissionsResponse {
	return &pb.ListSubmissionsResponse{Threats: each(l.Threats, threatToPB), Total: int64(l.Total)}
}

func threatListFromPB(r *pb.ListSubmissionsResponse) core.ThreatList {
	return core.ThreatList{Threats: each(r.Threats, threatFromPB), Total: int(r.Total)}
}

func pendingQueryToPB(q core.PendingQuery) *pb.ListPendingRequest {
	r := &pb.ListPendingRequest{Limit: int32(q.Limit), AfterId: q.AfterID}
	if q.AfterID != "" {
		r.AfterCreatedAt = ts(q.AfterCreatedAt)
	}
	return r
}

func pendingQueryFromPB(r *pb.ListPendingRequest) core.PendingQuery {
	q := core.PendingQuery{Limit: int(r.Limit), AfterID: r.AfterId}
	if r.AfterId != "" {
		q.AfterCreatedAt = fromTS(r.AfterCreatedAt)
	}
	return q
}

func modificationToPB(m core.Modification) *pb.ModifyRequest {
	return &pb.ModifyRequest{ThreatId: m.ThreatID, AuthorId: m.AuthorID, AuthorName: m.AuthorName,
		PatchJson: patchToPB(m.Patch), BaseRevision: int32(m.BaseRevision), At: ts(m.At), Policy: policyToPB(m.Policy),
		Version: int32(m.Version), Iocs: iocsToPB(m.IOCs)}
}

// modificationFromPB fails on a patch that is not a submission's JSON.
func modificationFromPB(r *pb.ModifyRequest) (core.Modification, error) {
	patch, err := patchFromWire(r.PatchJson)
	if err != nil {
		return core.Modification{}, err
	}
	return core.Modification{ThreatID: r.ThreatId, AuthorID: r.AuthorId, AuthorName: r.AuthorName, Patch: patch,
		BaseRevision: int(r.BaseRevision), At: fromTS(r.At), Version: int(r.Version), IOCs: iocsFromPB(r.Iocs),
		Policy: policyFromPB(r.Policy)}, nil
}

func decisionToPB(d core.RevisionDecision) *pb.RevisionDecision {
	return &pb.RevisionDecision{RevisionId: d.RevisionID, Approve: d.Approve, Note: d.Note,
		ActorId: d.ActorID, ActorName: d.ActorName, At: ts(d.At), Version: int32(d.Version), Iocs: iocsToPB(d.IOCs)}
}

func decisionFromPB(r *pb.RevisionDecision) core.RevisionDecision {
	return core.RevisionDecision{RevisionID: r.RevisionId, Approve: r.Approve, Note: r.Note,
		ActorID: r.ActorId, ActorName: r.ActorName, At: fromTS(r.At), Version: int(r.Version), IOCs: iocsFromPB(r.Iocs)}
}

func submitterRecordsToPB(recs []core.SubmitterRecord) *pb.SubmitterRecordsResponse {
	return &pb.SubmitterRecordsResponse{Records: each(recs, func(r core.SubmitterRecord) *pb.SubmitterRecord {
		return &pb.SubmitterRecord{UserId: r.UserID, Name: r.Name, Verified: r.Verified, Rejected: r.Rejected, Pending: r.Pending}
	})}
}

func submitterRecordsFromPB(r *pb.SubmitterRecordsResponse) []core.SubmitterRecord {
	return each(r.Records, func(x *pb.SubmitterRecord) core.SubmitterRecord {
		return core.SubmitterRecord{UserID: x.UserId, Name: x.Name, Verified: x.Verified, Rejected: x.Rejected, Pending: x.Pending}
	})
}

// Published reports.

func latestFilterToPB(f core.LatestFilter) *pb.LatestRequest {
	return &pb.LatestRequest{ReportType: string(f.ReportType), Registry: f.Registry, Severity: string(f.Severity), Limit: int32(f.Limit)}
}

func latestFilterFromPB(r *pb.LatestRequest) core.LatestFilter {
	return core.LatestFilter{ReportType: core.ReportType(r.ReportType), Registry: r.Registry, Severity: core.Severity(r.Severity), Limit: int(r.Limit)}
}

func keyPrefixQueryToPB(q core.KeyPrefixQuery) *pb.ThreatsByKeyPrefixRequest {
	return &pb.ThreatsByKeyPrefixRequest{Prefixes: q.Prefixes, After: q.After, Limit: int32(q.Limit)}
}

func keyPrefixQueryFromPB(r *pb.ThreatsByKeyPrefixRequest) core.KeyPrefixQuery {
	return core.KeyPrefixQuery{Prefixes: r.Prefixes, After: r.After, Limit: int(r.Limit)}
}

func changeQueryToPB(q core.ChangeQuery) *pb.ChangesRequest {
	return &pb.ChangesRequest{After: q.After, Limit: int32(q.Limit)}
}

func changeQueryFromPB(r *pb.ChangesRequest) core.ChangeQuery {
	return core.ChangeQuery{After: r.After, Limit: int(r.Limit)}
}

// Imports.

func importBatchToPB(b core.ImportBatch) *pb.ImportThreatsRequest {
	return &pb.ImportThreatsRequest{Records: each(b.Records, importRecordToPB), Actor: b.Actor}
}

func importBatchFromPB(r *pb.ImportThreatsRequest) core.ImportBatch {
	return core.ImportBatch{Records: each(r.Records, importRecordFromPB), Actor: r.Actor}
}

func outcomesToPB(out []core.ImportOutcome) *pb.ImportThreatsResponse {
	return &pb.ImportThreatsResponse{Outcomes: each(out, func(o core.ImportOutcome) *pb.ImportOutcome {
		return &pb.ImportOutcome{UpstreamId: o.UpstreamID, Result: o.Result, ThreatId: o.ThreatID, Reason: o.Reason}
	})}
}

func outcomesFromPB(r *pb.ImportThreatsResponse) []core.ImportOutcome {
	return each(r.Outcomes, func(o *pb.ImportOutcome) core.ImportOutcome {
		return core.ImportOutcome{UpstreamID: o.UpstreamId, Result: o.Result, ThreatID: o.ThreatId, Reason: o.Reason}
	})
}

func versionQueryToPB(q core.VersionQuery) *pb.ImportedVersionsRequest {
	return &pb.ImportedVersionsRequest{Source: q.Source, UpstreamIds: q.IDs}
}

func versionQueryFromPB(r *pb.ImportedVersionsRequest) core.VersionQuery {
	return core.VersionQuery{Source: r.Source, IDs: r.UpstreamIds}
}

func versionsToPB(m map[string]time.Time) *pb.ImportedVersionsResponse {
	r := &pb.ImportedVersionsResponse{UpstreamIds: make([]string, 0, len(m)), Modified: make([]*timestamppb.Timestamp, 0, len(m))}
	for id, t := range m {
		r.UpstreamIds = append(r.UpstreamIds, id)
		r.Modified = append(r.Modified, ts(t))
	}
	return r
}

// Operations.

func leaseClaimToPB(l core.LeaseClaim) *pb.LeaseRequest {
	return &pb.LeaseRequest{Name: l.Name, Holder: l.Holder, TtlMs: l.TTL.Milliseconds()}
}

func leaseClaimFromPB(r *pb.LeaseRequest) core.LeaseClaim {
	return core.LeaseClaim{Name: r.Name, Holder: r.Holder, TTL: time.Duration(r.TtlMs) * time.Millisecond}
}

func usageQueryToPB(q core.UsageQuery) *pb.UsageRequest {
	return &pb.UsageRequest{TokenId: q.TokenID, Day: q.Day}
}

func usageQueryFromPB(r *pb.UsageRequest) core.UsageQuery {
	return core.UsageQuery{TokenID: r.TokenId, Day: r.Day}
}

func usageDeltasToPB(deltas []core.UsageDelta) *pb.UsageDeltas {
	return &pb.UsageDeltas{Deltas: each(deltas, func(d core.UsageDelta) *pb.UsageDelta {
		return &pb.UsageDelta{Day: d.Day, TokenId: d.TokenID, Endpoint: d.Endpoint, Calls: d.Calls}
	})}
}

func usageDeltasFromPB(r *pb.UsageDeltas) []core.UsageDelta {
	return each(r.Deltas, func(u *pb.UsageDelta) core.UsageDelta {
		return core.UsageDelta{Day: u.Day, TokenID: u.TokenId, Endpoint: u.Endpoint, Calls: u.Calls}
	})
}

func rateCountsToPB(r core.RateCounts) *pb.RateCounts {
	return &pb.RateCounts{Window: r.Window, Counts: r.Counts}
}

func rateCountsFromPB(r *pb.RateCounts) core.RateCounts {
	return core.RateCounts{Window: r.Window, Counts: r.Counts}
}

func statsToPB(v core.Stats) *pb.StatsResponse {
	return &pb.StatsResponse{Users: v.Users, Tokens: v.Tokens, Threats: v.Threats, LastSeq: v.LastSeq}
}

func statsFromPB(r *pb.StatsResponse) core.Stats {
	return core.Stats{Users: r.Users, Tokens: r.Tokens, Threats: r.Threats, LastSeq: r.LastSeq}
}

// Webhooks.

func dueQueryToPB(q core.DueQuery) *pb.DueDeliveriesRequest {
	return &pb.DueDeliveriesRequest{Now: ts(q.Now), Limit: int32(q.Limit), Except: q.Except}
}

func dueQueryFromPB(r *pb.DueDeliveriesRequest) core.DueQuery {
	return core.DueQuery{Now: fromTS(r.Now), Limit: int(r.Limit), Except: r.Except}
}

func attemptQueryToPB(q core.AttemptQuery) *pb.WebhookAttemptsRequest {
	return &pb.WebhookAttemptsRequest{WebhookId: q.WebhookID, Limit: int32(q.Limit)}
}

func attemptQueryFromPB(r *pb.WebhookAttemptsRequest) core.AttemptQuery {
	return core.AttemptQuery{WebhookID: r.WebhookId, Limit: int(r.Limit)}
}

func webhookTrimToPB(t core.WebhookTrim) *pb.TrimWebhooksRequest {
	return &pb.TrimWebhooksRequest{MaxPending: int32(min(t.MaxPending, 1<<31-1)), FinishedBefore: ts(t.FinishedBefore)}
}

func webhookTrimFromPB(r *pb.TrimWebhooksRequest) core.WebhookTrim {
	return core.WebhookTrim{MaxPending: int(r.MaxPending), FinishedBefore: fromTS(r.FinishedBefore)}
}

func attemptOutcomeToPB(o core.AttemptOutcome) *pb.AttemptOutcome {
	return &pb.AttemptOutcome{Attempt: attemptToPB(o.Attempt), NextAt: ts(o.NextAt),
		Payload: o.Payload, HasPayload: o.Payload != nil, Disable: o.Disable}
}

func attemptOutcomeFromPB(r *pb.AttemptOutcome) core.AttemptOutcome {
	o := core.AttemptOutcome{Attempt: attemptFromPB(r.Attempt), NextAt: fromTS(r.NextAt), Disable: r.Disable}
	if r.HasPayload {
		o.Payload = r.Payload
	}
	return o
}

func webhookQueueToPB(q core.WebhookQueue) *pb.WebhookQueueResponse {
	return &pb.WebhookQueueResponse{Pending: q.Pending, Oldest: ts(q.Oldest)}
}

func webhookQueueFromPB(r *pb.WebhookQueueResponse) core.WebhookQueue {
	return core.WebhookQueue{Pending: r.Pending, Oldest: fromTS(r.Oldest)}
}

// each converts every element of a list.
func each[T, U any](in []T, conv func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = conv(v)
	}
	return out
}
