// The plugin side of the storage protocol: a core.Store served over gRPC.

package plugins

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

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

func (s *storageServer) Migrate(ctx context.Context, _ *pb.MigrateRequest) (*pb.MigrateResponse, error) {
	return withStore(s, func(st core.Store) (*pb.MigrateResponse, error) {
		applied, err := st.Migrate(ctx)
		return &pb.MigrateResponse{Applied: applied}, err
	})
}

func (s *storageServer) Health(ctx context.Context, _ *pb.HealthRequest) (*pb.HealthResponse, error) {
	return withStore(s, func(st core.Store) (*pb.HealthResponse, error) {
		return &pb.HealthResponse{Status: "ok"}, st.Health(ctx)
	})
}

func (s *storageServer) Stats(ctx context.Context, _ *pb.StatsRequest) (*pb.StatsResponse, error) {
	return withStore(s, func(st core.Store) (*pb.StatsResponse, error) {
		v, err := st.Stats(ctx)
		return &pb.StatsResponse{Users: v.Users, Tokens: v.Tokens, Threats: v.Threats, LastSeq: v.LastSeq}, err
	})
}

func (s *storageServer) ListSubmissions(ctx context.Context, req *pb.ListSubmissionsRequest) (*pb.ListSubmissionsResponse, error) {
	return withStore(s, func(st core.Store) (*pb.ListSubmissionsResponse, error) {
		l, err := st.ListSubmissions(ctx, core.SubmissionQuery{UserID: req.UserId, Offset: int(req.Offset), Limit: int(req.Limit)})
		out := &pb.ListSubmissionsResponse{Total: int64(l.Total)}
		for _, t := range l.Threats {
			out.Threats = append(out.Threats, threatToPB(t))
		}
		return out, err
	})
}

func (s *storageServer) CreateThreat(ctx context.Context, req *pb.CreateThreatRequest) (*pb.CreateThreatResponse, error) {
	return withStore(s, func(st core.Store) (*pb.CreateThreatResponse, error) {
		return &pb.CreateThreatResponse{}, st.CreateThreat(ctx, core.SubmittedThreat{Threat: threatFromPB(req.Threat), Policy: policyFromPB(req.Policy)})
	})
}

func (s *storageServer) GetThreat(ctx context.Context, req *pb.GetThreatRequest) (*pb.Threat, error) {
	return withStore(s, func(st core.Store) (*pb.Threat, error) {
		t, err := st.GetThreat(ctx, req.Id)
		return threatToPB(t), err
	})
}

func (s *storageServer) GetThreats(ctx context.Context, req *pb.GetThreatsRequest) (*pb.ThreatList, error) {
	return withStore(s, func(st core.Store) (*pb.ThreatList, error) {
		ts, err := st.GetThreats(ctx, req.Ids)
		out := &pb.ThreatList{Threats: make([]*pb.Threat, len(ts))}
		for i, t := range ts {
			out.Threats[i] = threatToPB(t)
		}
		return out, err
	})
}

func (s *storageServer) ReviewThreat(ctx context.Context, req *pb.Review) (*pb.Threat, error) {
	return withStore(s, func(st core.Store) (*pb.Threat, error) {
		t, err := st.ReviewThreat(ctx, reviewFromPB(req))
		return threatToPB(t), err
	})
}

func (s *storageServer) ListPending(req *pb.ListPendingRequest, stream grpc.ServerStreamingServer[pb.PendingItem]) error {
	q := core.PendingQuery{Limit: int(req.Limit), AfterID: req.AfterId}
	if req.AfterId != "" {
		q.AfterCreatedAt = fromTS(req.AfterCreatedAt)
	}
	l, err := withStore(s, func(st core.Store) (core.ThreatList, error) {
		return st.ListPending(stream.Context(), q)
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
	return streamAll(s, func(st core.Store) ([]core.ReviewEvent, error) {
		return st.ReviewEvents(stream.Context(), req.ThreatId)
	}, eventToPB, stream.Send)
}

func (s *storageServer) LatestVerified(req *pb.LatestRequest, stream grpc.ServerStreamingServer[pb.Threat]) error {
	return streamAll(s, func(st core.Store) ([]core.Threat, error) {
		return st.LatestVerified(stream.Context(), core.LatestFilter{ReportType: core.ReportType(req.ReportType),
			Registry: req.Registry, Severity: core.Severity(req.Severity), Limit: int(req.Limit)})
	}, threatToPB, stream.Send)
}

func (s *storageServer) VerifiedSummaries(_ *pb.VerifiedSummariesRequest, stream grpc.ServerStreamingServer[pb.SummaryBatch]) error {
	st, err := s.get()
	if err != nil {
		return err
	}
	return toStatus(classify(st, st.EachVerifiedSummary(stream.Context(), func(batch []core.Summary) error {
		msg := &pb.SummaryBatch{Summaries: make([]*pb.Summary, len(batch))}
		for i, sum := range batch {
			msg.Summaries[i] = summaryToPB(sum)
		}
		return stream.Send(msg)
	})))
}

func (s *storageServer) ModifyThreat(ctx context.Context, req *pb.ModifyRequest) (*pb.ModifyResponse, error) {
	return withStore(s, func(st core.Store) (*pb.ModifyResponse, error) {
		patch, err := patchFromWire(req.PatchJson)
		if err != nil {
			return nil, err
		}
		m, err := st.ModifyThreat(ctx, core.Modification{ThreatID: req.ThreatId, AuthorID: req.AuthorId, AuthorName: req.AuthorName,
			Patch: patch, BaseRevision: int(req.BaseRevision), At: fromTS(req.At), Version: int(req.Version), IOCs: iocsFromPB(req.Iocs),
			Policy: policyFromPB(req.Policy)})
		return modifiedToPB(m), err
	})
}

func (s *storageServer) DecideRevision(ctx context.Context, req *pb.RevisionDecision) (*pb.ModifyResponse, error) {
	return withStore(s, func(st core.Store) (*pb.ModifyResponse, error) {
		m, err := st.DecideRevision(ctx, core.RevisionDecision{RevisionID: req.RevisionId, Approve: req.Approve, Note: req.Note,
			ActorID: req.ActorId, ActorName: req.ActorName, At: fromTS(req.At), Version: int(req.Version), IOCs: iocsFromPB(req.Iocs)})
		return modifiedToPB(m), err
	})
}

func (s *storageServer) GetRevision(ctx context.Context, req *pb.GetRevisionRequest) (*pb.Revision, error) {
	return withStore(s, func(st core.Store) (*pb.Revision, error) {
		r, err := st.GetRevision(ctx, req.Id)
		return revisionToPB(r), err
	})
}

func (s *storageServer) ListPendingRevisions(_ *pb.ListPendingRevisionsRequest, stream grpc.ServerStreamingServer[pb.Revision]) error {
	return streamAll(s, func(st core.Store) ([]core.Revision, error) {
		return st.ListPendingRevisions(stream.Context())
	}, revisionToPB, stream.Send)
}

func (s *storageServer) SyncRateCounts(ctx context.Context, req *pb.RateCounts) (*pb.RateCounts, error) {
	return withStore(s, func(st core.Store) (*pb.RateCounts, error) {
		totals, err := st.SyncRateCounts(ctx, req.Window, req.Counts)
		return &pb.RateCounts{Window: req.Window, Counts: totals}, err
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
	return streamAll(s, func(st core.Store) ([]core.Threat, error) {
		return st.QueryThreats(stream.Context(), threatQueryFromPB(req))
	}, threatToPB, stream.Send)
}

func (s *storageServer) CountThreats(ctx context.Context, req *pb.ThreatQuery) (*pb.CountThreatsResponse, error) {
	return withStore(s, func(st core.Store) (*pb.CountThreatsResponse, error) {
		n, err := st.CountThreats(ctx, threatQueryFromPB(req))
		return &pb.CountThreatsResponse{Count: n}, err
	})
}

func (s *storageServer) ThreatsByKeyPrefix(req *pb.ThreatsByKeyPrefixRequest, stream grpc.ServerStreamingServer[pb.Threat]) error {
	return streamAll(s, func(st core.Store) ([]core.Threat, error) {
		return st.ThreatsByKeyPrefix(stream.Context(), req.Prefixes, req.After, int(req.Limit))
	}, threatToPB, stream.Send)
}

func (s *storageServer) SubmitterRecords(ctx context.Context, req *pb.SubmitterRecordsRequest) (*pb.SubmitterRecordsResponse, error) {
	return withStore(s, func(st core.Store) (*pb.SubmitterRecordsResponse, error) {
		recs, err := st.SubmitterRecords(ctx, req.UserIds)
		out := &pb.SubmitterRecordsResponse{}
		for _, r := range recs {
			out.Records = append(out.Records, &pb.SubmitterRecord{UserId: r.UserID, Name: r.Name, Verified: r.Verified, Rejected: r.Rejected, Pending: r.Pending})
		}
		return out, err
	})
}

func (s *storageServer) Feed(req *pb.FeedQuery, stream grpc.ServerStreamingServer[pb.FeedItem]) error {
	return streamAll(s, func(st core.Store) ([]core.FeedItem, error) {
		return st.Feed(stream.Context(), feedQueryFromPB(req))
	}, feedItemToPB, stream.Send)
}

func (s *storageServer) LastFeedEvent(ctx context.Context, req *pb.LastFeedEventRequest) (*pb.FeedEvent, error) {
	return withStore(s, func(st core.Store) (*pb.FeedEvent, error) {
		e, err := st.LastFeedEvent(ctx, fromTS(req.To))
		return feedEventToPB(e), err
	})
}

func (s *storageServer) ListRevisions(req *pb.ListRevisionsRequest, stream grpc.ServerStreamingServer[pb.Revision]) error {
	return streamAll(s, func(st core.Store) ([]core.Revision, error) {
		return st.ListRevisions(stream.Context(), req.ThreatId)
	}, revisionToPB, stream.Send)
}

func (s *storageServer) Secret(ctx context.Context, req *pb.SecretRequest) (*pb.SecretResponse, error) {
	return withStore(s, func(st core.Store) (*pb.SecretResponse, error) {
		v, err := st.Secret(ctx, req.Name)
		return &pb.SecretResponse{Value: v}, err
	})
}

func (s *storageServer) AddUsage(ctx context.Context, req *pb.UsageDeltas) (*pb.AddUsageResponse, error) {
	return withStore(s, func(st core.Store) (*pb.AddUsageResponse, error) {
		d := make([]core.UsageDelta, len(req.Deltas))
		for i, u := range req.Deltas {
			d[i] = core.UsageDelta{Day: u.Day, TokenID: u.TokenId, Endpoint: u.Endpoint, Calls: u.Calls}
		}
		return &pb.AddUsageResponse{}, st.AddUsage(ctx, d)
	})
}

func (s *storageServer) Usage(ctx context.Context, req *pb.UsageRequest) (*pb.UsageResponse, error) {
	return withStore(s, func(st core.Store) (*pb.UsageResponse, error) {
		u, err := st.Usage(ctx, req.TokenId, req.Day)
		return &pb.UsageResponse{Calls: u}, err
	})
}

func (s *storageServer) ImportedVersions(ctx context.Context, req *pb.ImportedVersionsRequest) (*pb.ImportedVersionsResponse, error) {
	return withStore(s, func(st core.Store) (*pb.ImportedVersionsResponse, error) {
		m, err := st.ImportedVersions(ctx, req.Source, req.UpstreamIds)
		resp := &pb.ImportedVersionsResponse{UpstreamIds: make([]string, 0, len(m)), Modified: make([]*timestamppb.Timestamp, 0, len(m))}
		for id, t := range m {
			resp.UpstreamIds = append(resp.UpstreamIds, id)
			resp.Modified = append(resp.Modified, ts(t))
		}
		return resp, err
	})
}

func (s *storageServer) ImportThreats(ctx context.Context, req *pb.ImportThreatsRequest) (*pb.ImportThreatsResponse, error) {
	return withStore(s, func(st core.Store) (*pb.ImportThreatsResponse, error) {
		recs := make([]core.ImportRecord, len(req.Records))
		for i, r := range req.Records {
			recs[i] = importRecordFromPB(r)
		}
		outcomes, err := st.ImportThreats(ctx, recs, req.Actor)
		resp := &pb.ImportThreatsResponse{}
		for _, o := range outcomes {
			resp.Outcomes = append(resp.Outcomes, &pb.ImportOutcome{UpstreamId: o.UpstreamID, Result: o.Result, ThreatId: o.ThreatID, Reason: o.Reason})
		}
		return resp, err
	})
}

func (s *storageServer) Lease(ctx context.Context, req *pb.LeaseRequest) (*pb.LeaseResponse, error) {
	return withStore(s, func(st core.Store) (*pb.LeaseResponse, error) {
		held, err := st.Lease(ctx, req.Name, req.Holder, time.Duration(req.TtlMs)*time.Millisecond)
		return &pb.LeaseResponse{Held: held}, err
	})
}

func (s *storageServer) Changes(req *pb.ChangesRequest, stream grpc.ServerStreamingServer[pb.Change]) error {
	return streamAll(s, func(st core.Store) ([]core.Change, error) {
		return st.Changes(stream.Context(), req.After, int(req.Limit))
	}, changeToPB, stream.Send)
}

// streamAll sends every item fn returns as one stream message each, so that
// no single message approaches gRPC's 4 MiB limit.
func streamAll[T, P any](s *storageServer, fn func(core.Store) ([]T, error), conv func(T) P, send func(P) error) error {
	items, err := withStore(s, fn)
	if err != nil {
		return err
	}
	for _, it := range items {
		if err := send(conv(it)); err != nil {
			return err
		}
	}
	return nil
}
