package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

// StorageConfig is what the daemon tells a storage plugin at Configure.
type StorageConfig struct {
	DSN      string
	DataDir  string
	Settings map[string]string
}

// StorageOpener opens a backend's core.Store from its configuration. It is
// all a storage plugin author writes besides the Store itself.
type StorageOpener func(ctx context.Context, cfg StorageConfig) (core.Store, error)

// storagePlugin is the go-plugin glue for the storage kind.
type storagePlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	backend string
	open    StorageOpener
}

func (p *storagePlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterStorageServer(s, &storageServer{backend: p.backend, open: p.open})
	return nil
}

func (p *storagePlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	sc := &StorageClient{}
	sc.rpc.Store(&storageConn{pb.NewStorageClient(c)})
	return sc, nil
}

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
	st, err := s.open(ctx, StorageConfig{DSN: req.Dsn, DataDir: req.DataDir, Settings: req.Settings})
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

func (s *storageServer) CreateUser(ctx context.Context, req *pb.CreateUserRequest) (*pb.User, error) {
	return withStore(s, func(st core.Store) (*pb.User, error) {
		u, err := st.CreateUser(ctx, userFromPB(req.User))
		return userToPB(u), err
	})
}

func (s *storageServer) UserByEmail(ctx context.Context, req *pb.UserByEmailRequest) (*pb.User, error) {
	return withStore(s, func(st core.Store) (*pb.User, error) {
		u, err := st.UserByEmail(ctx, req.Email)
		return userToPB(u), err
	})
}

func (s *storageServer) SetUserLimit(ctx context.Context, req *pb.SetUserLimitRequest) (*pb.User, error) {
	return withStore(s, func(st core.Store) (*pb.User, error) {
		u, err := st.SetUserLimit(ctx, req.Email, int32Ptr(req.SubmissionsPerHour))
		return userToPB(u), err
	})
}

func (s *storageServer) CreateToken(ctx context.Context, req *pb.CreateTokenRequest) (*pb.Token, error) {
	return withStore(s, func(st core.Store) (*pb.Token, error) {
		t, err := st.CreateToken(ctx, tokenFromPB(req.Token))
		return tokenToPB(t), err
	})
}

func (s *storageServer) RevokeToken(ctx context.Context, req *pb.RevokeTokenRequest) (*pb.Token, error) {
	return withStore(s, func(st core.Store) (*pb.Token, error) {
		t, err := st.RevokeToken(ctx, req.Hash)
		return tokenToPB(t), err
	})
}

func (s *storageServer) Authenticate(ctx context.Context, req *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	return withStore(s, func(st core.Store) (*pb.AuthenticateResponse, error) {
		t, u, err := st.Authenticate(ctx, req.Hash)
		return &pb.AuthenticateResponse{Token: tokenToPB(t), User: userToPB(u)}, err
	})
}

func (s *storageServer) CreateThreat(ctx context.Context, req *pb.CreateThreatRequest) (*pb.Threat, error) {
	return withStore(s, func(st core.Store) (*pb.Threat, error) {
		t, err := st.CreateThreat(ctx, threatFromPB(req.Threat), policyFromPB(req.Policy))
		return threatToPB(t), err
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

func (s *storageServer) ListPending(req *pb.ListPendingRequest, stream grpc.ServerStreamingServer[pb.Threat]) error {
	return streamAll(s, func(st core.Store) ([]core.Threat, error) {
		return st.ListPending(stream.Context(), int(req.Limit))
	}, threatToPB, stream.Send)
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
		t, r, err := st.ModifyThreat(ctx, core.Modification{ThreatID: req.ThreatId, AuthorID: req.AuthorId, AuthorName: req.AuthorName,
			Patch: patchFromPB(req.PatchJson), BaseRevision: int(req.BaseRevision), At: fromTS(req.At)}, policyFromPB(req.Policy))
		return modifyResponse(t, r), err
	})
}

func (s *storageServer) DecideRevision(ctx context.Context, req *pb.RevisionDecision) (*pb.ModifyResponse, error) {
	return withStore(s, func(st core.Store) (*pb.ModifyResponse, error) {
		t, r, err := st.DecideRevision(ctx, core.RevisionDecision{RevisionID: req.RevisionId, Approve: req.Approve, Note: req.Note,
			ActorID: req.ActorId, ActorName: req.ActorName, At: fromTS(req.At)})
		return modifyResponse(t, r), err
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
	resp, err := c.conn().Configure(ctx, &pb.ConfigureRequest{Dsn: cfg.DSN, DataDir: cfg.DataDir, Settings: cfg.Settings})
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
	return call(r, err, func(r *pb.StatsResponse) core.Stats {
		return core.Stats{Users: r.Users, Tokens: r.Tokens, Threats: r.Threats, LastSeq: r.LastSeq}
	})
}

// CreateUser stores a user.
func (c *StorageClient) CreateUser(ctx context.Context, u core.User) (core.User, error) {
	r, err := c.conn().CreateUser(ctx, &pb.CreateUserRequest{User: userToPB(u)})
	return call(r, err, userFromPB)
}

// UserByEmail looks a user up by e-mail.
func (c *StorageClient) UserByEmail(ctx context.Context, email string) (core.User, error) {
	r, err := c.conn().UserByEmail(ctx, &pb.UserByEmailRequest{Email: email})
	return call(r, err, userFromPB)
}

// SetUserLimit sets a user's hourly submission limit.
func (c *StorageClient) SetUserLimit(ctx context.Context, email string, perHour *int) (core.User, error) {
	r, err := c.conn().SetUserLimit(ctx, &pb.SetUserLimitRequest{Email: email, SubmissionsPerHour: intPtr32(perHour)})
	return call(r, err, userFromPB)
}

// CreateToken stores a token hash.
func (c *StorageClient) CreateToken(ctx context.Context, t core.Token) (core.Token, error) {
	r, err := c.conn().CreateToken(ctx, &pb.CreateTokenRequest{Token: tokenToPB(t)})
	return call(r, err, tokenFromPB)
}

// RevokeToken revokes a token by hash.
func (c *StorageClient) RevokeToken(ctx context.Context, hash string) (core.Token, error) {
	r, err := c.conn().RevokeToken(ctx, &pb.RevokeTokenRequest{Hash: hash})
	return call(r, err, tokenFromPB)
}

// Authenticate resolves a token hash to the token and its user.
func (c *StorageClient) Authenticate(ctx context.Context, hash string) (core.Token, core.User, error) {
	r, err := c.conn().Authenticate(ctx, &pb.AuthenticateRequest{Hash: hash})
	if err != nil {
		return core.Token{}, core.User{}, fromStatus(err)
	}
	return tokenFromPB(r.Token), userFromPB(r.User), nil
}

// CreateThreat stores a pending report under the submit policy.
func (c *StorageClient) CreateThreat(ctx context.Context, t core.Threat, p core.SubmitPolicy) (core.Threat, error) {
	r, err := c.conn().CreateThreat(ctx, &pb.CreateThreatRequest{Threat: threatToPB(t), Policy: policyToPB(p)})
	return call(r, err, threatFromPB)
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
			out := make([]core.Threat, len(r.Threats))
			for i, t := range r.Threats {
				out[i] = threatFromPB(t)
			}
			return out, nil
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

// ListPending returns pending reports, oldest first.
func (c *StorageClient) ListPending(ctx context.Context, limit int) ([]core.Threat, error) {
	stream, err := c.conn().ListPending(ctx, &pb.ListPendingRequest{Limit: int32(limit)})
	return recvAll(stream, err, threatFromPB)
}

// ReviewEvents returns a report's review events.
func (c *StorageClient) ReviewEvents(ctx context.Context, threatID string) ([]core.ReviewEvent, error) {
	stream, err := c.conn().ReviewEvents(ctx, &pb.ReviewEventsRequest{ThreatId: threatID})
	return recvAll(stream, err, eventFromPB)
}

// LatestVerified returns verified reports, most recently verified first.
func (c *StorageClient) LatestVerified(ctx context.Context, f core.LatestFilter) ([]core.Threat, error) {
	stream, err := c.conn().LatestVerified(ctx, &pb.LatestRequest{ReportType: string(f.ReportType), Registry: f.Registry,
		Severity: string(f.Severity), Limit: int32(f.Limit)})
	return recvAll(stream, err, threatFromPB)
}

// EachVerifiedSummary streams the summaries of every verified report.
func (c *StorageClient) EachVerifiedSummary(ctx context.Context, fn func([]core.Summary) error) error {
	stream, err := c.conn().VerifiedSummaries(ctx, &pb.VerifiedSummariesRequest{})
	return eachRecv(stream, err, func(m *pb.SummaryBatch) error {
		batch := make([]core.Summary, len(m.Summaries))
		for i, s := range m.Summaries {
			batch[i] = summaryFromPB(s)
		}
		return fn(batch)
	})
}

// ModifyThreat stores a change to a report.
func (c *StorageClient) ModifyThreat(ctx context.Context, m core.Modification, p core.SubmitPolicy) (core.Threat, core.Revision, error) {
	r, err := c.conn().ModifyThreat(ctx, &pb.ModifyRequest{ThreatId: m.ThreatID, AuthorId: m.AuthorID, AuthorName: m.AuthorName,
		PatchJson: patchToPB(m.Patch), BaseRevision: int32(m.BaseRevision), At: ts(m.At), Policy: policyToPB(p)})
	if err != nil {
		return core.Threat{}, core.Revision{}, fromStatus(err)
	}
	return threatFromPB(r.Threat), revisionFromPB(r.Revision), nil
}

// DecideRevision approves or rejects a pending revision.
func (c *StorageClient) DecideRevision(ctx context.Context, d core.RevisionDecision) (core.Threat, core.Revision, error) {
	r, err := c.conn().DecideRevision(ctx, &pb.RevisionDecision{RevisionId: d.RevisionID, Approve: d.Approve, Note: d.Note,
		ActorId: d.ActorID, ActorName: d.ActorName, At: ts(d.At)})
	if err != nil {
		return core.Threat{}, core.Revision{}, fromStatus(err)
	}
	return threatFromPB(r.Threat), revisionFromPB(r.Revision), nil
}

// ListPendingRevisions returns pending revisions, oldest first.
func (c *StorageClient) ListPendingRevisions(ctx context.Context) ([]core.Revision, error) {
	stream, err := c.conn().ListPendingRevisions(ctx, &pb.ListPendingRevisionsRequest{})
	return recvAll(stream, err, revisionFromPB)
}

// SyncRateCounts adds to the shared counters of a window and returns its totals.
func (c *StorageClient) SyncRateCounts(ctx context.Context, window int64, deltas map[string]int64) (map[string]int64, error) {
	r, err := c.conn().SyncRateCounts(ctx, &pb.RateCounts{Window: window, Counts: deltas})
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

// Feed returns one page of published changes.
func (c *StorageClient) Feed(ctx context.Context, q core.FeedQuery) ([]core.FeedItem, error) {
	stream, err := c.conn().Feed(ctx, feedQueryToPB(q))
	return recvAll(stream, err, feedItemFromPB)
}

// LastFeedEvent returns the last published change before to.
func (c *StorageClient) LastFeedEvent(ctx context.Context, to time.Time) (core.FeedEvent, error) {
	r, err := c.conn().LastFeedEvent(ctx, &pb.LastFeedEventRequest{To: ts(to)})
	if err != nil {
		return core.FeedEvent{}, fromStatus(err)
	}
	return feedEventFromPB(r), nil
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
	req := &pb.UsageDeltas{Deltas: make([]*pb.UsageDelta, len(deltas))}
	for i, d := range deltas {
		req.Deltas[i] = &pb.UsageDelta{Day: d.Day, TokenId: d.TokenID, Endpoint: d.Endpoint, Calls: d.Calls}
	}
	_, err := c.conn().AddUsage(ctx, req)
	return fromStatus(err)
}

// Usage returns a token's paid calls of a day.
func (c *StorageClient) Usage(ctx context.Context, tokenID, day string) (map[string]int64, error) {
	r, err := c.conn().Usage(ctx, &pb.UsageRequest{TokenId: tokenID, Day: day})
	return call(r, err, (*pb.UsageResponse).GetCalls)
}

// ImportThreats applies a batch of upstream records.
func (c *StorageClient) ImportThreats(ctx context.Context, recs []core.ImportRecord, actor string) ([]core.ImportOutcome, error) {
	req := &pb.ImportThreatsRequest{Actor: actor}
	for _, r := range recs {
		req.Records = append(req.Records, importRecordToPB(r))
	}
	r, err := c.conn().ImportThreats(ctx, req)
	if err != nil {
		return nil, fromStatus(err)
	}
	out := make([]core.ImportOutcome, len(r.Outcomes))
	for i, o := range r.Outcomes {
		out[i] = core.ImportOutcome{UpstreamID: o.UpstreamId, Result: o.Result, ThreatID: o.ThreatId, Reason: o.Reason}
	}
	return out, nil
}

// ImportedVersions returns the upstream modified times of imported
// reports; a plugin that predates it knows none (every record is then
// decoded and left to ImportThreats).
func (c *StorageClient) ImportedVersions(ctx context.Context, source string, ids []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if c.noImportedVersions.Load() {
		return out, nil
	}
	r, err := c.conn().ImportedVersions(ctx, &pb.ImportedVersionsRequest{Source: source, UpstreamIds: ids})
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
func (c *StorageClient) Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	r, err := c.conn().Lease(ctx, &pb.LeaseRequest{Name: name, Holder: holder, TtlMs: ttl.Milliseconds()})
	return call(r, err, (*pb.LeaseResponse).GetHeld)
}

// Changes reads the change feed after seq.
func (c *StorageClient) Changes(ctx context.Context, after int64, limit int) ([]core.Change, error) {
	stream, err := c.conn().Changes(ctx, &pb.ChangesRequest{After: after, Limit: int32(limit)})
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
