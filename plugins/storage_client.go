// The daemon side of the storage protocol: a core.Store whose every call
// is one RPC to the plugin process.

package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

// StorageClient is the daemon's side of a storage plugin: a core.Store whose
// every call is one RPC to the plugin process.
type StorageClient struct {
	// rpc is the current plugin process's client: a supervisor replaces it
	// when the process dies and a new one has started (host.go).
	rpc    atomic.Pointer[storageConn]
	closer func() error
	// noGetThreats: the plugin predates GetThreats.
	noGetThreats atomic.Bool
	// noImportedVersions: the plugin predates ImportedVersions.
	noImportedVersions atomic.Bool
}

// Configure opens the plugin's database and returns the backend's name.
func (c *StorageClient) Configure(ctx context.Context, cfg StorageConfig) (string, error) {
	resp, err := c.conn().Configure(ctx, &pb.ConfigureRequest{Dsn: cfg.DSN, DataDir: cfg.DataDir, Settings: cfg.Settings, Exclusive: cfg.Exclusive, Create: cfg.Create, CreateEmpty: cfg.CreateEmpty})
	if err != nil {
		return "", fromStatus(err)
	}
	return resp.Backend, nil
}

// call makes one RPC and converts its reply, or its status into a domain error.
func call[R, O any](r R, err error, conv func(R) O) (O, error) {
	if err != nil {
		var zero O
		return zero, fromStatus(err)
	}
	return conv(r), nil
}

// Migrate applies the plugin's pending migrations.
func (c *StorageClient) Migrate(ctx context.Context) ([]string, error) {
	r, err := c.conn().Migrate(ctx, &pb.MigrateRequest{})
	return call(r, err, (*pb.MigrateResponse).GetApplied)
}

// Health asks the plugin whether its database answers.
func (c *StorageClient) Health(ctx context.Context) error {
	_, err := c.conn().Health(ctx, &pb.HealthRequest{})
	return fromStatus(err)
}

// Stats returns the plugin's row counts.
func (c *StorageClient) Stats(ctx context.Context) (core.Stats, error) {
	r, err := c.conn().Stats(ctx, &pb.StatsRequest{})
	return call(r, err, statsFromPB)
}

// ListSubmissions returns one page of a user's reports and their count.
func (c *StorageClient) ListSubmissions(ctx context.Context, q core.SubmissionQuery) (core.ThreatList, error) {
	r, err := c.conn().ListSubmissions(ctx, submissionQueryToPB(q))
	return call(r, err, threatListFromPB)
}

// CreateThreat stores a pending report under the submit policy.
func (c *StorageClient) CreateThreat(ctx context.Context, s core.SubmittedThreat) error {
	_, err := c.conn().CreateThreat(ctx, submittedToPB(s))
	return fromStatus(err)
}

// GetThreat returns one report.
func (c *StorageClient) GetThreat(ctx context.Context, id string) (core.Threat, error) {
	r, err := c.conn().GetThreat(ctx, &pb.GetThreatRequest{Id: id})
	return call(r, err, threatFromPB)
}

// GetThreats returns the reports with these ids in one round trip, or with
// one GetThreat per id from a plugin that predates GetThreats.
func (c *StorageClient) GetThreats(ctx context.Context, ids []string) ([]core.Threat, error) {
	if !c.noGetThreats.Load() {
		r, err := c.conn().GetThreats(ctx, &pb.GetThreatsRequest{Ids: ids})
		if status.Code(err) != codes.Unimplemented {
			if err != nil {
				return nil, fromStatus(err)
			}
			return each(r.Threats, threatFromPB), nil
		}
		c.noGetThreats.Store(true)
	}
	var out []core.Threat
	for _, id := range ids {
		t, err := c.GetThreat(ctx, id)
		if errors.Is(err, core.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// ReviewThreat applies a review decision.
func (c *StorageClient) ReviewThreat(ctx context.Context, rv core.Review) (core.Threat, error) {
	r, err := c.conn().ReviewThreat(ctx, reviewToPB(rv))
	return call(r, err, threatFromPB)
}

// ListPending returns one page of pending reports, oldest first, and how
// many are pending.
func (c *StorageClient) ListPending(ctx context.Context, q core.PendingQuery) (core.ThreatList, error) {
	stream, err := c.conn().ListPending(ctx, pendingQueryToPB(q))
	var out core.ThreatList
	err = eachRecv(stream, err, func(it *pb.PendingItem) error {
		if it.Threat == nil {
			out.Total = int(it.Total)
		} else {
			out.Threats = append(out.Threats, threatFromPB(it.Threat))
		}
		return nil
	})
	if err != nil {
		return core.ThreatList{}, err
	}
	return out, nil
}

// ReviewEvents returns a report's review events.
func (c *StorageClient) ReviewEvents(ctx context.Context, threatID string) ([]core.ReviewEvent, error) {
	stream, err := c.conn().ReviewEvents(ctx, &pb.ReviewEventsRequest{ThreatId: threatID})
	return recvAll(stream, err, eventFromPB)
}

// LatestVerified returns verified reports, most recently verified first.
func (c *StorageClient) LatestVerified(ctx context.Context, f core.LatestFilter) ([]core.Threat, error) {
	stream, err := c.conn().LatestVerified(ctx, latestFilterToPB(f))
	return recvAll(stream, err, threatFromPB)
}

// EachVerifiedSummary streams the summaries of every verified report.
func (c *StorageClient) EachVerifiedSummary(ctx context.Context, fn func([]core.Summary) error) error {
	stream, err := c.conn().VerifiedSummaries(ctx, &pb.VerifiedSummariesRequest{})
	return eachRecv(stream, err, func(m *pb.SummaryBatch) error { return fn(each(m.Summaries, summaryFromPB)) })
}

// ModifyThreat stores a change to a report.
func (c *StorageClient) ModifyThreat(ctx context.Context, m core.Modification) (core.Modified, error) {
	r, err := c.conn().ModifyThreat(ctx, modificationToPB(m))
	return call(r, err, modifiedFromPB)
}

// DecideRevision approves or rejects a pending revision.
func (c *StorageClient) DecideRevision(ctx context.Context, d core.RevisionDecision) (core.Modified, error) {
	r, err := c.conn().DecideRevision(ctx, decisionToPB(d))
	return call(r, err, modifiedFromPB)
}

// GetRevision returns one revision.
func (c *StorageClient) GetRevision(ctx context.Context, id string) (core.Revision, error) {
	r, err := c.conn().GetRevision(ctx, &pb.GetRevisionRequest{Id: id})
	return call(r, err, revisionFromPB)
}

// ListPendingRevisions returns pending revisions, oldest first.
func (c *StorageClient) ListPendingRevisions(ctx context.Context) ([]core.Revision, error) {
	stream, err := c.conn().ListPendingRevisions(ctx, &pb.ListPendingRevisionsRequest{})
	return recvAll(stream, err, revisionFromPB)
}

// SyncRateCounts adds to the shared counters of a window and returns its totals.
func (c *StorageClient) SyncRateCounts(ctx context.Context, rc core.RateCounts) (map[string]int64, error) {
	r, err := c.conn().SyncRateCounts(ctx, rateCountsToPB(rc))
	return call(r, err, (*pb.RateCounts).GetCounts)
}

// Export streams every stored row in batches.
func (c *StorageClient) Export(ctx context.Context, fn func(table string, rows []byte) error) error {
	stream, err := c.conn().Export(ctx, &pb.ExportRequest{})
	return eachRecv(stream, err, func(m *pb.RowBatch) error { return fn(m.Table, m.Rows) })
}

// Import streams batches to the plugin, which writes them in one transaction.
// An error from next aborts the stream and the plugin rolls everything back.
func (c *StorageClient) Import(ctx context.Context, next func() (string, []byte, bool, error)) (map[string]int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.conn().Import(ctx)
	if err != nil {
		return nil, fromStatus(err)
	}
	for {
		table, rows, ok, err := next()
		if err != nil {
			cancel() // the plugin sees the stream fail and rolls back
			return nil, err
		}
		if !ok {
			break
		}
		if err := stream.Send(&pb.RowBatch{Table: table, Rows: rows}); err != nil {
			_, rerr := stream.CloseAndRecv()
			return nil, fromStatus(rerr)
		}
	}
	r, err := stream.CloseAndRecv()
	if err != nil {
		return nil, fromStatus(err)
	}
	return r.Counts, nil
}

// QueryThreats returns one keyset page of verified reports.
func (c *StorageClient) QueryThreats(ctx context.Context, q core.ThreatQuery) ([]core.Threat, error) {
	stream, err := c.conn().QueryThreats(ctx, threatQueryToPB(q))
	return recvAll(stream, err, threatFromPB)
}

// CountThreats counts what q's filters select.
func (c *StorageClient) CountThreats(ctx context.Context, q core.ThreatQuery) (int64, error) {
	r, err := c.conn().CountThreats(ctx, threatQueryToPB(q))
	return call(r, err, func(r *pb.CountThreatsResponse) int64 { return r.Count })
}

// ThreatsByKeyPrefix returns verified reports by canonical key prefix.
func (c *StorageClient) ThreatsByKeyPrefix(ctx context.Context, q core.KeyPrefixQuery) ([]core.Threat, error) {
	stream, err := c.conn().ThreatsByKeyPrefix(ctx, keyPrefixQueryToPB(q))
	return recvAll(stream, err, threatFromPB)
}

// SubmitterRecords returns submitters' names and reports by status.
func (c *StorageClient) SubmitterRecords(ctx context.Context, userIDs []string) ([]core.SubmitterRecord, error) {
	r, err := c.conn().SubmitterRecords(ctx, &pb.SubmitterRecordsRequest{UserIds: userIDs})
	return call(r, err, submitterRecordsFromPB)
}

// Feed returns one page of published changes.
func (c *StorageClient) Feed(ctx context.Context, q core.FeedQuery) ([]core.FeedItem, error) {
	stream, err := c.conn().Feed(ctx, feedQueryToPB(q))
	return recvAll(stream, err, feedItemFromPB)
}

// LastFeedEvent returns the last published change before to.
func (c *StorageClient) LastFeedEvent(ctx context.Context, to time.Time) (core.FeedEvent, error) {
	r, err := c.conn().LastFeedEvent(ctx, &pb.LastFeedEventRequest{To: ts(to)})
	return call(r, err, feedEventFromPB)
}

// ListRevisions returns every revision of a report.
func (c *StorageClient) ListRevisions(ctx context.Context, threatID string) ([]core.Revision, error) {
	stream, err := c.conn().ListRevisions(ctx, &pb.ListRevisionsRequest{ThreatId: threatID})
	return recvAll(stream, err, revisionFromPB)
}

// Secret returns a named service secret.
func (c *StorageClient) Secret(ctx context.Context, name string) (string, error) {
	r, err := c.conn().Secret(ctx, &pb.SecretRequest{Name: name})
	return call(r, err, (*pb.SecretResponse).GetValue)
}

// AddUsage adds paid-call counts.
func (c *StorageClient) AddUsage(ctx context.Context, deltas []core.UsageDelta) error {
	_, err := c.conn().AddUsage(ctx, usageDeltasToPB(deltas))
	return fromStatus(err)
}

// Usage returns a token's paid calls of a day.
func (c *StorageClient) Usage(ctx context.Context, q core.UsageQuery) (map[string]int64, error) {
	r, err := c.conn().Usage(ctx, usageQueryToPB(q))
	return call(r, err, (*pb.UsageResponse).GetCalls)
}

// ImportThreats applies a batch of upstream records.
func (c *StorageClient) ImportThreats(ctx context.Context, b core.ImportBatch) ([]core.ImportOutcome, error) {
	r, err := c.conn().ImportThreats(ctx, importBatchToPB(b))
	return call(r, err, outcomesFromPB)
}

// ImportedVersions returns the upstream modified times of imported
// reports; a plugin that predates it knows none (every record is then
// decoded and left to ImportThreats).
func (c *StorageClient) ImportedVersions(ctx context.Context, q core.VersionQuery) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if c.noImportedVersions.Load() {
		return out, nil
	}
	r, err := c.conn().ImportedVersions(ctx, versionQueryToPB(q))
	if status.Code(err) == codes.Unimplemented {
		c.noImportedVersions.Store(true)
		return out, nil
	}
	if err != nil {
		return nil, fromStatus(err)
	}
	if len(r.Modified) != len(r.UpstreamIds) {
		return nil, fmt.Errorf("storage plugin: ImportedVersions: %d ids but %d times", len(r.UpstreamIds), len(r.Modified))
	}
	for i, id := range r.UpstreamIds {
		out[id] = fromTS(r.Modified[i])
	}
	return out, nil
}

// Lease takes or renews a named lease.
func (c *StorageClient) Lease(ctx context.Context, l core.LeaseClaim) (bool, error) {
	r, err := c.conn().Lease(ctx, leaseClaimToPB(l))
	return call(r, err, (*pb.LeaseResponse).GetHeld)
}

// Changes reads the change feed after seq.
func (c *StorageClient) Changes(ctx context.Context, q core.ChangeQuery) ([]core.Change, error) {
	stream, err := c.conn().Changes(ctx, changeQueryToPB(q))
	return recvAll(stream, err, changeFromPB)
}

// recvAll collects a server stream into domain values.
func recvAll[P, T any](stream grpc.ServerStreamingClient[P], err error, conv func(*P) T) ([]T, error) {
	var out []T
	err = eachRecv(stream, err, func(m *P) error {
		out = append(out, conv(m))
		return nil
	})
	return out, err
}

// eachRecv calls fn with every message of a server stream until its end.
func eachRecv[P any](stream grpc.ServerStreamingClient[P], err error, fn func(*P) error) error {
	if err != nil {
		return fromStatus(err)
	}
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fromStatus(err)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
}

// Close stops the plugin process (when the client came from a Host).
func (c *StorageClient) Close() error {
	if c.closer != nil {
		return c.closer()
	}
	return nil
}

var _ core.Store = (*StorageClient)(nil)

type storageConn struct{ pb.StorageClient }

// conn is the client of the current storage process.
func (c *StorageClient) conn() pb.StorageClient { return c.rpc.Load().StorageClient }
