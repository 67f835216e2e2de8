// The plugin side of the storage protocol: a core.Store served over gRPC.

package plugins

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

// storageServer serves a core.Store over the storage protocol.
type storageServer struct {
	pb.UnimplementedStorageServer
	backend string
	open    StorageOpener

	mu    sync.RWMutex
	store core.Store
}

func (s *storageServer) get() (core.Store, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.store == nil {
		return nil, status.Error(codes.FailedPrecondition, "storage plugin not configured: Configure must be called first")
	}
	return s.store, nil
}

func (s *storageServer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store != nil {
		_ = s.store.Close()
		s.store = nil
	}
}

func (s *storageServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	st, err := s.open(ctx, StorageConfig{DSN: req.Dsn, DataDir: req.DataDir, Settings: req.Settings, Exclusive: req.Exclusive, Create: req.Create, CreateEmpty: req.CreateEmpty})
	if err != nil {
		return nil, toStatus(err)
	}
	s.mu.Lock()
	old := s.store
	s.store = st
	s.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return &pb.ConfigureResponse{Backend: s.backend}, nil
}

// withStore runs fn on the configured store and turns its error into a
// typed gRPC status.
func withStore[R any](s *storageServer, fn func(core.Store) (R, error)) (R, error) {
	var zero R
	st, err := s.get()
	if err != nil {
		return zero, err
	}
	r, err := fn(st)
	if err != nil {
		return zero, toStatus(classify(st, err))
	}
	return r, nil
}

// classify lets a store say which of its errors mean a damaged database
// (core.ErrCorrupt), e.g. storage.Store.Classify.
func classify(st core.Store, err error) error {
	if c, ok := st.(interface{ Classify(error) error }); ok {
		return c.Classify(err)
	}
	return err
}

// unary serves a call of the port's shape (the store, a context and one
// request in; one reply or an error out), given the request in domain
// form, the port method as a method expression (core.Store.GetThreat)
// and the reply's converter.
func unary[Q, R, P any](s *storageServer, ctx context.Context, q Q, op func(core.Store, context.Context, Q) (R, error), out func(R) P) (P, error) {
	return withStore(s, func(st core.Store) (P, error) {
		r, err := op(st, ctx, q)
		if err != nil {
			var zero P
			return zero, err
		}
		return out(r), nil
	})
}

// run serves a call whose reply is empty (a P).
func run[P, Q any](s *storageServer, ctx context.Context, q Q, op func(core.Store, context.Context, Q) error) (*P, error) {
	return withStore(s, func(st core.Store) (*P, error) { return new(P), op(st, ctx, q) })
}

// list serves a call whose reply is a list, one stream message an item, so
// that no single message approaches gRPC's 4 MiB limit.
func list[Q, T, P any](s *storageServer, stream grpc.ServerStreamingServer[P], q Q, op func(core.Store, context.Context, Q) ([]T, error), out func(T) *P) error {
	items, err := withStore(s, func(st core.Store) ([]T, error) { return op(st, stream.Context(), q) })
	if err != nil {
		return err
	}
	for _, it := range items {
		if err := stream.Send(out(it)); err != nil {
			return err
		}
	}
	return nil
}

// none adapts a port method with no request to the helpers above.
func none[R any](op func(core.Store, context.Context) (R, error)) func(core.Store, context.Context, struct{}) (R, error) {
	return func(st core.Store, ctx context.Context, _ struct{}) (R, error) { return op(st, ctx) }
}

func (s *storageServer) Migrate(ctx context.Context, _ *pb.MigrateRequest) (*pb.MigrateResponse, error) {
	return unary(s, ctx, struct{}{}, none(core.Store.Migrate), func(a []string) *pb.MigrateResponse { return &pb.MigrateResponse{Applied: a} })
}

func (s *storageServer) Health(ctx context.Context, _ *pb.HealthRequest) (*pb.HealthResponse, error) {
	return withStore(s, func(st core.Store) (*pb.HealthResponse, error) {
		return &pb.HealthResponse{Status: "ok"}, st.Health(ctx)
	})
}

func (s *storageServer) Stats(ctx context.Context, _ *pb.StatsRequest) (*pb.StatsResponse, error) {
	return unary(s, ctx, struct{}{}, none(core.Store.Stats), statsToPB)
}

func (s *storageServer) ListSubmissions(ctx context.Context, req *pb.ListSubmissionsRequest) (*pb.ListSubmissionsResponse, error) {
	return unary(s, ctx, submissionQueryFromPB(req), core.Store.ListSubmissions, threatListToPB)
}

func (s *storageServer) CreateThreat(ctx context.Context, req *pb.CreateThreatRequest) (*pb.CreateThreatResponse, error) {
	return run[pb.CreateThreatResponse](s, ctx, submittedFromPB(req), core.Store.CreateThreat)
}

func (s *storageServer) GetThreat(ctx context.Context, req *pb.GetThreatRequest) (*pb.Threat, error) {
	return unary(s, ctx, req.Id, core.Store.GetThreat, threatToPB)
}

func (s *storageServer) GetThreats(ctx context.Context, req *pb.GetThreatsRequest) (*pb.ThreatList, error) {
	return unary(s, ctx, req.Ids, core.Store.GetThreats, func(ts []core.Threat) *pb.ThreatList {
		return &pb.ThreatList{Threats: each(ts, threatToPB)}
	})
}

func (s *storageServer) ReviewThreat(ctx context.Context, req *pb.Review) (*pb.Threat, error) {
	return unary(s, ctx, reviewFromPB(req), core.Store.ReviewThreat, threatToPB)
}

// ListPending sends the number of pending reports alone first, then one
// message a report.
func (s *storageServer) ListPending(req *pb.ListPendingRequest, stream grpc.ServerStreamingServer[pb.PendingItem]) error {
	l, err := withStore(s, func(st core.Store) (core.ThreatList, error) {
		return st.ListPending(stream.Context(), pendingQueryFromPB(req))
	})
	if err != nil {
		return err
	}
	if err := stream.Send(&pb.PendingItem{Total: int64(l.Total)}); err != nil {
		return err
	}
	for _, t := range l.Threats {
		if err := stream.Send(&pb.PendingItem{Threat: threatToPB(t)}); err != nil {
			return err
		}
	}
	return nil
}

func (s *storageServer) ReviewEvents(req *pb.ReviewEventsRequest, stream grpc.ServerStreamingServer[pb.ReviewEvent]) error {
	return list(s, stream, req.ThreatId, core.Store.ReviewEvents, eventToPB)
}

func (s *storageServer) LatestVerified(req *pb.LatestRequest, stream grpc.ServerStreamingServer[pb.Threat]) error {
	return list(s, stream, latestFilterFromPB(req), core.Store.LatestVerified, threatToPB)
}

func (s *storageServer) VerifiedSummaries(_ *pb.VerifiedSummariesRequest, stream grpc.ServerStreamingServer[pb.SummaryBatch]) error {
	st, err := s.get()
	if err != nil {
		return err
	}
	return toStatus(classify(st, st.EachVerifiedSummary(stream.Context(), func(batch []core.Summary) error {
		return stream.Send(&pb.SummaryBatch{Summaries: each(batch, summaryToPB)})
	})))
}

func (s *storageServer) ModifyThreat(ctx context.Context, req *pb.ModifyRequest) (*pb.ModifyResponse, error) {
	m, err := modificationFromPB(req)
	if err != nil {
		return nil, toStatus(err)
	}
	return unary(s, ctx, m, core.Store.ModifyThreat, modifiedToPB)
}

func (s *storageServer) DecideRevision(ctx context.Context, req *pb.RevisionDecision) (*pb.ModifyResponse, error) {
	return unary(s, ctx, decisionFromPB(req), core.Store.DecideRevision, modifiedToPB)
}

func (s *storageServer) GetRevision(ctx context.Context, req *pb.GetRevisionRequest) (*pb.Revision, error) {
	return unary(s, ctx, req.Id, core.Store.GetRevision, revisionToPB)
}

func (s *storageServer) ListPendingRevisions(_ *pb.ListPendingRevisionsRequest, stream grpc.ServerStreamingServer[pb.Revision]) error {
	return list(s, stream, struct{}{}, none(core.Store.ListPendingRevisions), revisionToPB)
}

func (s *storageServer) SyncRateCounts(ctx context.Context, req *pb.RateCounts) (*pb.RateCounts, error) {
	return unary(s, ctx, rateCountsFromPB(req), core.Store.SyncRateCounts, func(totals map[string]int64) *pb.RateCounts {
		return &pb.RateCounts{Window: req.Window, Counts: totals}
	})
}

func (s *storageServer) Export(_ *pb.ExportRequest, stream grpc.ServerStreamingServer[pb.RowBatch]) error {
	st, err := s.get()
	if err != nil {
		return err
	}
	return toStatus(st.Export(stream.Context(), func(table string, rows []byte) error {
		return stream.Send(&pb.RowBatch{Table: table, Rows: rows})
	}))
}

func (s *storageServer) Import(stream grpc.ClientStreamingServer[pb.RowBatch, pb.ImportResult]) error {
	st, err := s.get()
	if err != nil {
		return err
	}
	counts, err := st.Import(stream.Context(), func() (string, []byte, bool, error) {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return "", nil, false, nil
		}
		if err != nil {
			return "", nil, false, err
		}
		return m.Table, m.Rows, true, nil
	})
	if err != nil {
		return toStatus(err)
	}
	return stream.SendAndClose(&pb.ImportResult{Counts: counts})
}

func (s *storageServer) QueryThreats(req *pb.ThreatQuery, stream grpc.ServerStreamingServer[pb.Threat]) error {
	return list(s, stream, threatQueryFromPB(req), core.Store.QueryThreats, threatToPB)
}

func (s *storageServer) CountThreats(ctx context.Context, req *pb.ThreatQuery) (*pb.CountThreatsResponse, error) {
	return unary(s, ctx, threatQueryFromPB(req), core.Store.CountThreats, func(n int64) *pb.CountThreatsResponse {
		return &pb.CountThreatsResponse{Count: n}
	})
}

func (s *storageServer) ThreatsByKeyPrefix(req *pb.ThreatsByKeyPrefixRequest, stream grpc.ServerStreamingServer[pb.Threat]) error {
	return list(s, stream, keyPrefixQueryFromPB(req), core.Store.ThreatsByKeyPrefix, threatToPB)
}

func (s *storageServer) SubmitterRecords(ctx context.Context, req *pb.SubmitterRecordsRequest) (*pb.SubmitterRecordsResponse, error) {
	return unary(s, ctx, req.UserIds, core.Store.SubmitterRecords, submitterRecordsToPB)
}

func (s *storageServer) Feed(req *pb.FeedQuery, stream grpc.ServerStreamingServer[pb.FeedItem]) error {
	return list(s, stream, feedQueryFromPB(req), core.Store.Feed, feedItemToPB)
}

func (s *storageServer) LastFeedEvent(ctx context.Context, req *pb.LastFeedEventRequest) (*pb.FeedEvent, error) {
	return unary(s, ctx, fromTS(req.To), core.Store.LastFeedEvent, feedEventToPB)
}

func (s *storageServer) ListRevisions(req *pb.ListRevisionsRequest, stream grpc.ServerStreamingServer[pb.Revision]) error {
	return list(s, stream, req.ThreatId, core.Store.ListRevisions, revisionToPB)
}

func (s *storageServer) Secret(ctx context.Context, req *pb.SecretRequest) (*pb.SecretResponse, error) {
	return unary(s, ctx, req.Name, core.Store.Secret, func(v string) *pb.SecretResponse { return &pb.SecretResponse{Value: v} })
}

func (s *storageServer) AddUsage(ctx context.Context, req *pb.UsageDeltas) (*pb.AddUsageResponse, error) {
	return run[pb.AddUsageResponse](s, ctx, usageDeltasFromPB(req), core.Store.AddUsage)
}

func (s *storageServer) Usage(ctx context.Context, req *pb.UsageRequest) (*pb.UsageResponse, error) {
	return unary(s, ctx, usageQueryFromPB(req), core.Store.Usage, func(u map[string]int64) *pb.UsageResponse {
		return &pb.UsageResponse{Calls: u}
	})
}

func (s *storageServer) ImportedVersions(ctx context.Context, req *pb.ImportedVersionsRequest) (*pb.ImportedVersionsResponse, error) {
	return unary(s, ctx, versionQueryFromPB(req), core.Store.ImportedVersions, versionsToPB)
}

func (s *storageServer) ImportThreats(ctx context.Context, req *pb.ImportThreatsRequest) (*pb.ImportThreatsResponse, error) {
	return unary(s, ctx, importBatchFromPB(req), core.Store.ImportThreats, outcomesToPB)
}

func (s *storageServer) Lease(ctx context.Context, req *pb.LeaseRequest) (*pb.LeaseResponse, error) {
	return unary(s, ctx, leaseClaimFromPB(req), core.Store.Lease, func(held bool) *pb.LeaseResponse { return &pb.LeaseResponse{Held: held} })
}

func (s *storageServer) Changes(req *pb.ChangesRequest, stream grpc.ServerStreamingServer[pb.Change]) error {
	return list(s, stream, changeQueryFromPB(req), core.Store.Changes, changeToPB)
}
