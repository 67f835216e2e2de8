package plugins

import (
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func tsPtr(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

func fromTS(p *timestamppb.Timestamp) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.AsTime().UTC()
}

func fromTSPtr(p *timestamppb.Timestamp) *time.Time {
	if p == nil {
		return nil
	}
	t := p.AsTime().UTC()
	return &t
}

func intPtr32(p *int) *int32 {
	if p == nil {
		return nil
	}
	v := int32(*p)
	return &v
}

func int32Ptr(p *int32) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}

func userToPB(u core.User) *pb.User {
	return &pb.User{
		Id: u.ID, Email: u.Email, Name: u.Name, Tier: string(u.Tier), Role: string(u.Role),
		SubmissionsPerHour: intPtr32(u.SubmissionsPerHour), CreatedAt: ts(u.CreatedAt), PasswordHash: u.PasswordHash,
		DisabledAt: tsPtr(u.DisabledAt), DeletedAt: tsPtr(u.DeletedAt),
	}
}

func userFromPB(u *pb.User) core.User {
	if u == nil {
		return core.User{}
	}
	return core.User{
		ID: u.Id, Email: u.Email, Name: u.Name, Tier: core.Tier(u.Tier), Role: core.Role(u.Role),
		SubmissionsPerHour: int32Ptr(u.SubmissionsPerHour), CreatedAt: fromTS(u.CreatedAt), PasswordHash: u.PasswordHash,
		DisabledAt: fromTSPtr(u.DisabledAt), DeletedAt: fromTSPtr(u.DeletedAt),
	}
}

func tokenToPB(t core.Token) *pb.Token {
	return &pb.Token{
		Id: t.ID, UserId: t.UserID, Name: t.Name, Hash: t.Hash, Hint: t.Hint,
		CreatedAt: ts(t.CreatedAt), RevokedAt: tsPtr(t.RevokedAt), LastUsedAt: tsPtr(t.LastUsedAt),
	}
}

func tokenFromPB(t *pb.Token) core.Token {
	if t == nil {
		return core.Token{}
	}
	return core.Token{
		ID: t.Id, UserID: t.UserId, Name: t.Name, Hash: t.Hash, Hint: t.Hint,
		CreatedAt: fromTS(t.CreatedAt), RevokedAt: fromTSPtr(t.RevokedAt), LastUsedAt: fromTSPtr(t.LastUsedAt),
	}
}

func changeToPB(c core.Change) *pb.Change {
	return &pb.Change{Seq: c.Seq, Entity: string(c.Entity), EntityId: c.EntityID, Op: c.Op, At: ts(c.At)}
}

func changeFromPB(c *pb.Change) core.Change {
	return core.Change{Seq: c.Seq, Entity: core.Entity(c.Entity), EntityID: c.EntityId, Op: c.Op, At: fromTS(c.At)}
}

func threatToPB(t core.Threat) *pb.Threat {
	return &pb.Threat{
		Id: t.ID, ReportType: string(t.ReportType), ResourceIdentifier: t.ResourceIdentifier, Registry: t.Registry,
		CanonicalKey: t.CanonicalKey, Status: string(t.Status), SubmitterId: t.SubmitterID, Revision: int32(t.Revision), Version: int32(t.Version),
		CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt), VerifiedAt: tsPtr(t.VerifiedAt), VerifiedBy: t.VerifiedBy,
		Source: t.Source, UpstreamId: t.UpstreamID, AllVersions: t.AllVersions, UpstreamModified: tsPtr(t.UpstreamModified), LegacyStixIds: t.LegacySTIXIDs,
		Details: detailsToPB(t.Details), Iocs: iocsToPB(t.IOCs),
	}
}

func iocsToPB(iocs []ioc.IOC) []*pb.IOC {
	if len(iocs) == 0 {
		return nil
	}
	out := make([]*pb.IOC, len(iocs))
	for i, x := range iocs {
		out[i] = &pb.IOC{Type: x.Type, Value: x.Value, Detail: x.Detail, Versions: x.Versions, Origin: x.Origin, Confidence: int32(x.Confidence)}
	}
	return out
}

func iocsFromPB(iocs []*pb.IOC) []ioc.IOC {
	if len(iocs) == 0 {
		return nil
	}
	out := make([]ioc.IOC, len(iocs))
	for i, x := range iocs {
		out[i] = ioc.IOC{Type: x.Type, Value: x.Value, Detail: x.Detail, Versions: x.Versions, Origin: x.Origin, Confidence: int(x.Confidence)}
	}
	return out
}

func threatFromPB(t *pb.Threat) core.Threat {
	if t == nil {
		return core.Threat{}
	}
	out := core.Threat{
		ID: t.Id, ReportType: core.ReportType(t.ReportType), ResourceIdentifier: t.ResourceIdentifier, Registry: t.Registry,
		CanonicalKey: t.CanonicalKey, Status: core.Status(t.Status), SubmitterID: t.SubmitterId, Revision: int(t.Revision), Version: int(t.Version),
		CreatedAt: fromTS(t.CreatedAt), UpdatedAt: fromTS(t.UpdatedAt), VerifiedAt: fromTSPtr(t.VerifiedAt), VerifiedBy: t.VerifiedBy,
		Source: t.Source, UpstreamID: t.UpstreamId, AllVersions: t.AllVersions, UpstreamModified: fromTSPtr(t.UpstreamModified), LegacySTIXIDs: t.LegacyStixIds,
	}
	out.Details = detailsFromPB(t.Details)
	out.IOCs = iocsFromPB(t.Iocs)
	return out
}

// int64Copy copies an optional number, so the result shares nothing with
// the message.
func int64Copy(p *int64) *int64 {
	if p == nil {
		return nil
	}
	n := *p
	return &n
}

func policyToPB(p core.SubmitPolicy) *pb.SubmitPolicy {
	return &pb.SubmitPolicy{MaxUnverified: int32(p.MaxUnverified), VerifiedToLift: int32(p.VerifiedToLift), HourlyLimit: int32(p.HourlyLimit), Now: ts(p.Now)}
}

func policyFromPB(p *pb.SubmitPolicy) core.SubmitPolicy {
	if p == nil {
		return core.SubmitPolicy{}
	}
	return core.SubmitPolicy{MaxUnverified: int(p.MaxUnverified), VerifiedToLift: int(p.VerifiedToLift), HourlyLimit: int(p.HourlyLimit), Now: fromTS(p.Now)}
}

func reviewToPB(r core.Review) *pb.Review {
	return &pb.Review{ThreatId: r.ThreatID, Decision: string(r.Decision), Note: r.Note, ActorId: r.ActorID, ActorName: r.ActorName, At: ts(r.At), Version: int32(r.Version)}
}

func reviewFromPB(r *pb.Review) core.Review {
	return core.Review{ThreatID: r.ThreatId, Decision: core.Decision(r.Decision), Note: r.Note, ActorID: r.ActorId, ActorName: r.ActorName, At: fromTS(r.At), Version: int(r.Version)}
}

func eventToPB(e core.ReviewEvent) *pb.ReviewEvent {
	return &pb.ReviewEvent{Id: e.ID, ThreatId: e.ThreatID, RevisionId: e.RevisionID, Action: e.Action, FromStatus: string(e.From),
		ToStatus: string(e.To), ActorId: e.ActorID, ActorName: e.ActorName, Note: e.Note, At: ts(e.At)}
}

func eventFromPB(e *pb.ReviewEvent) core.ReviewEvent {
	return core.ReviewEvent{ID: e.Id, ThreatID: e.ThreatId, RevisionID: e.RevisionId, Action: e.Action, From: core.Status(e.FromStatus),
		To: core.Status(e.ToStatus), ActorID: e.ActorId, ActorName: e.ActorName, Note: e.Note, At: fromTS(e.At)}
}

// patchToPB and patchFromPB carry a patch as core.Submission's JSON: the
// fields are defined once, in core.
func patchToPB(s core.Patch) []byte {
	b, _ := json.Marshal(s) // strings, lists and numbers: cannot fail
	return b
}

// patchFromPB decodes what patchToPB wrote. Bytes that are not a patch are
// a protocol error: a write refuses them (patchFromWire) rather than store
// an empty change; a revision read back never has them (storage wrote
// them from a core.Submission).
func patchFromPB(b []byte) core.Patch {
	s, _ := patchFromWire(b)
	return s
}

// patchFromWire decodes a patch a write carries, or names why it cannot.
func patchFromWire(b []byte) (core.Patch, error) {
	var s core.Patch
	if len(b) > 0 {
		if err := json.Unmarshal(b, &s); err != nil {
			return core.Patch{}, core.Invalid("patch", "is not a patch of submit fields: %v", err)
		}
	}
	return s, nil
}

func revisionToPB(r core.Revision) *pb.Revision {
	return &pb.Revision{Id: r.ID, ThreatId: r.ThreatID, Number: int32(r.Number), AuthorId: r.AuthorID, AuthorName: r.AuthorName,
		State: r.State, PatchJson: patchToPB(r.Patch), Note: r.Note, CreatedAt: ts(r.CreatedAt), DecidedAt: tsPtr(r.DecidedAt), DecidedBy: r.DecidedBy}
}

func revisionFromPB(r *pb.Revision) core.Revision {
	if r == nil {
		return core.Revision{}
	}
	return core.Revision{ID: r.Id, ThreatID: r.ThreatId, Number: int(r.Number), AuthorID: r.AuthorId, AuthorName: r.AuthorName,
		State: r.State, Patch: patchFromPB(r.PatchJson), Note: r.Note, CreatedAt: fromTS(r.CreatedAt), DecidedAt: fromTSPtr(r.DecidedAt), DecidedBy: r.DecidedBy}
}

func modifiedToPB(m core.Modified) *pb.ModifyResponse {
	return &pb.ModifyResponse{Threat: threatToPB(m.Threat), Revision: revisionToPB(m.Revision)}
}

func modifiedFromPB(r *pb.ModifyResponse) core.Modified {
	return core.Modified{Threat: threatFromPB(r.Threat), Revision: revisionFromPB(r.Revision)}
}

func summaryToPB(s core.Summary) *pb.Summary {
	return &pb.Summary{Id: s.ID, CanonicalKey: s.CanonicalKey, ReportType: string(s.ReportType), Registry: s.Registry,
		VerifiedAt: ts(s.VerifiedAt), VersionInfo: s.VersionInfo, AllVersions: s.AllVersions}
}

func summaryFromPB(s *pb.Summary) core.Summary {
	return core.Summary{ID: s.Id, CanonicalKey: s.CanonicalKey, ReportType: core.ReportType(s.ReportType), Registry: s.Registry,
		VerifiedAt: fromTS(s.VerifiedAt), VersionInfo: s.VersionInfo, AllVersions: s.AllVersions}
}

func threatQueryToPB(q core.ThreatQuery) *pb.ThreatQuery {
	return &pb.ThreatQuery{VerifiedFrom: ts(q.VerifiedFrom), VerifiedTo: ts(q.VerifiedTo), Registry: q.Registry, Publisher: q.Publisher,
		AfterVerifiedAt: ts(q.AfterVerifiedAt), AfterId: q.AfterID, Descending: q.Descending, Limit: int32(q.Limit), UpstreamId: q.UpstreamID, Withdrawn: q.Withdrawn,
		ReportType: string(q.ReportType), Severity: string(q.Severity), IndicatorKey: q.IndicatorKey, Listing: q.Listing}
}

func threatQueryFromPB(q *pb.ThreatQuery) core.ThreatQuery {
	return core.ThreatQuery{VerifiedFrom: fromTS(q.VerifiedFrom), VerifiedTo: fromTS(q.VerifiedTo), Registry: q.Registry, Publisher: q.Publisher,
		AfterVerifiedAt: fromTS(q.AfterVerifiedAt), AfterID: q.AfterId, Descending: q.Descending, Limit: int(q.Limit), UpstreamID: q.UpstreamId, Withdrawn: q.Withdrawn,
		ReportType: core.ReportType(q.ReportType), Severity: core.Severity(q.Severity), IndicatorKey: q.IndicatorKey, Listing: q.Listing}
}

func feedQueryToPB(q core.FeedQuery) *pb.FeedQuery {
	return &pb.FeedQuery{From: ts(q.From), To: ts(q.To), Registry: q.Registry, Published: q.Published,
		AfterAt: ts(q.AfterAt), AfterSeq: q.AfterSeq, Limit: int32(q.Limit), Kind: q.Kind, Latest: q.Latest, ObjectIds: q.ObjectIDs}
}

func feedQueryFromPB(q *pb.FeedQuery) core.FeedQuery {
	return core.FeedQuery{From: fromTS(q.From), To: fromTS(q.To), Registry: q.Registry, Published: q.Published,
		AfterAt: fromTS(q.AfterAt), AfterSeq: q.AfterSeq, Limit: int(q.Limit), Kind: q.Kind, Latest: q.Latest, ObjectIDs: q.ObjectIds}
}

func feedEventToPB(e core.FeedEvent) *pb.FeedEvent {
	return &pb.FeedEvent{Seq: e.Seq, At: ts(e.At), ThreatId: e.ThreatID, Registry: e.Registry, Kind: e.Kind, Version: int32(e.Version)}
}

func feedEventFromPB(e *pb.FeedEvent) core.FeedEvent {
	return core.FeedEvent{Seq: e.Seq, At: fromTS(e.At), ThreatID: e.ThreatId, Registry: e.Registry, Kind: e.Kind, Version: int(e.Version)}
}

func feedItemToPB(i core.FeedItem) *pb.FeedItem {
	return &pb.FeedItem{Event: feedEventToPB(i.Event), Threat: threatToPB(i.Threat)}
}

func feedItemFromPB(i *pb.FeedItem) core.FeedItem {
	return core.FeedItem{Event: feedEventFromPB(i.Event), Threat: threatFromPB(i.Threat)}
}

func importRecordToPB(r core.ImportRecord) *pb.ImportRecord {
	return &pb.ImportRecord{Threat: threatToPB(r.Threat), Withdrawn: r.Withdrawn}
}

func importRecordFromPB(r *pb.ImportRecord) core.ImportRecord {
	return core.ImportRecord{Threat: threatFromPB(r.Threat), Withdrawn: r.Withdrawn}
}

func sessionToPB(s core.Session) *pb.Session {
	return &pb.Session{Hash: s.Hash, UserId: s.UserID, CreatedAt: ts(s.CreatedAt), ExpiresAt: ts(s.ExpiresAt)}
}

func sessionFromPB(s *pb.Session) core.Session {
	if s == nil {
		return core.Session{}
	}
	return core.Session{Hash: s.Hash, UserID: s.UserId, CreatedAt: fromTS(s.CreatedAt), ExpiresAt: fromTS(s.ExpiresAt)}
}

func webhookToPB(w core.Webhook) *pb.Webhook {
	return &pb.Webhook{Id: w.ID, Url: w.URL, Secret: w.Secret, Events: w.Events, Ecosystem: w.Ecosystem, CreatedAt: ts(w.CreatedAt),
		CreatedBy: w.CreatedBy, FailingSince: ts(w.FailingSince), LastSuccess: ts(w.LastSuccess), DisabledAt: ts(w.DisabledAt),
		DisabledReason: w.DisabledReason, Pending: w.Pending, Delivered: w.Delivered, Failed: w.Failed, Expired: w.Expired}
}

func webhookFromPB(w *pb.Webhook) core.Webhook {
	if w == nil {
		return core.Webhook{}
	}
	return core.Webhook{ID: w.Id, URL: w.Url, Secret: w.Secret, Events: w.Events, Ecosystem: w.Ecosystem, CreatedAt: fromTS(w.CreatedAt),
		CreatedBy: w.CreatedBy, FailingSince: fromTS(w.FailingSince), LastSuccess: fromTS(w.LastSuccess), DisabledAt: fromTS(w.DisabledAt),
		DisabledReason: w.DisabledReason, Pending: w.Pending, Delivered: w.Delivered, Failed: w.Failed, Expired: w.Expired}
}

func deliveryToPB(d core.Delivery) *pb.Delivery {
	return &pb.Delivery{WebhookId: d.WebhookID, Seq: d.Seq, ThreatId: d.ThreatID, Kind: d.Kind, Version: int32(d.Version),
		EventAt: ts(d.EventAt), State: d.State, Attempts: int32(d.Attempts), NextAt: ts(d.NextAt), Payload: d.Payload,
		HasPayload: d.Payload != nil, FinishedAt: ts(d.FinishedAt), Webhook: webhookToPB(d.Webhook)}
}

func deliveryFromPB(d *pb.Delivery) core.Delivery {
	out := core.Delivery{WebhookID: d.WebhookId, Seq: d.Seq, ThreatID: d.ThreatId, Kind: d.Kind, Version: int(d.Version),
		EventAt: fromTS(d.EventAt), State: d.State, Attempts: int(d.Attempts), NextAt: fromTS(d.NextAt),
		FinishedAt: fromTS(d.FinishedAt), Webhook: webhookFromPB(d.Webhook)}
	if d.HasPayload {
		out.Payload = append([]byte{}, d.Payload...)
	}
	return out
}

func attemptToPB(a core.DeliveryAttempt) *pb.DeliveryAttempt {
	return &pb.DeliveryAttempt{WebhookId: a.WebhookID, Seq: a.Seq, ThreatId: a.ThreatID, Kind: a.Kind, At: ts(a.At),
		Status: int32(a.Status), LatencyUs: a.Latency.Microseconds(), Error: a.Error, State: a.State}
}

func attemptFromPB(a *pb.DeliveryAttempt) core.DeliveryAttempt {
	if a == nil {
		return core.DeliveryAttempt{}
	}
	return core.DeliveryAttempt{WebhookID: a.WebhookId, Seq: a.Seq, ThreatID: a.ThreatId, Kind: a.Kind, At: fromTS(a.At),
		Status: int(a.Status), Latency: time.Duration(a.LatencyUs) * time.Microsecond, Error: a.Error, State: a.State}
}

func accountChangeToPB(c core.AccountChange) *pb.AccountChange {
	out := &pb.AccountChange{UserId: c.UserID, Name: c.Name, PasswordHash: c.PasswordHash, Disabled: c.Disabled,
		EndSessions: c.EndSessions, KeepSession: c.KeepSession, At: ts(c.At)}
	if d := c.Delete; d != nil {
		out.Delete = &pb.AccountDeletion{Email: d.Email, Name: d.Name, Note: d.Note, ActorName: d.ActorName}
	}
	return out
}

func accountChangeFromPB(c *pb.AccountChange) core.AccountChange {
	out := core.AccountChange{UserID: c.UserId, Name: c.Name, PasswordHash: c.PasswordHash, Disabled: c.Disabled,
		EndSessions: c.EndSessions, KeepSession: c.KeepSession, At: fromTS(c.At)}
	if d := c.Delete; d != nil {
		out.Delete = &core.AccountDeletion{Email: d.Email, Name: d.Name, Note: d.Note, ActorName: d.ActorName}
	}
	return out
}

func accountChangedToPB(c core.AccountChanged) *pb.AccountChanged {
	return &pb.AccountChanged{User: userToPB(c.User), TokensRevoked: int32(c.TokensRevoked), SessionsEnded: int32(c.SessionsEnded),
		ReportsWithdrawn: int32(c.ReportsWithdrawn), RevisionsWithdrawn: int32(c.RevisionsWithdrawn)}
}

func accountChangedFromPB(c *pb.AccountChanged) core.AccountChanged {
	return core.AccountChanged{User: userFromPB(c.User), TokensRevoked: int(c.TokensRevoked), SessionsEnded: int(c.SessionsEnded),
		ReportsWithdrawn: int(c.ReportsWithdrawn), RevisionsWithdrawn: int(c.RevisionsWithdrawn)}
}
