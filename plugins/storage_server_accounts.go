package plugins

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

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
		u, err := st.SetUserLimit(ctx, core.UserLimit{Email: req.Email, PerHour: int32Ptr(req.SubmissionsPerHour)})
		return userToPB(u), err
	})
}

func (s *storageServer) SetUserAccess(ctx context.Context, req *pb.SetUserAccessRequest) (*pb.User, error) {
	return withStore(s, func(st core.Store) (*pb.User, error) {
		a := core.UserAccess{Email: req.Email}
		if req.Tier != nil {
			t := core.Tier(*req.Tier)
			a.Tier = &t
		}
		if req.Role != nil {
			r := core.Role(*req.Role)
			a.Role = &r
		}
		u, err := st.SetUserAccess(ctx, a)
		return userToPB(u), err
	})
}

func (s *storageServer) ListUsers(ctx context.Context, req *pb.ListUsersRequest) (*pb.ListUsersResponse, error) {
	return withStore(s, func(st core.Store) (*pb.ListUsersResponse, error) {
		us, err := st.ListUsers(ctx, core.UserQuery{After: req.After, Limit: int(req.Limit)})
		out := &pb.ListUsersResponse{Users: make([]*pb.User, len(us))}
		for i, u := range us {
			out.Users[i] = userToPB(u)
		}
		return out, err
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
		o, err := st.Authenticate(ctx, req.Hash)
		return &pb.AuthenticateResponse{Token: tokenToPB(o.Token), User: userToPB(o.User)}, err
	})
}

func (s *storageServer) ListTokens(req *pb.ListTokensRequest, stream grpc.ServerStreamingServer[pb.Token]) error {
	return streamAll(s, func(st core.Store) ([]core.Token, error) {
		return st.ListTokens(stream.Context(), req.UserId)
	}, tokenToPB, stream.Send)
}

func (s *storageServer) RevokeUserToken(ctx context.Context, req *pb.RevokeUserTokenRequest) (*pb.Token, error) {
	return withStore(s, func(st core.Store) (*pb.Token, error) {
		t, err := st.RevokeUserToken(ctx, core.UserToken{UserID: req.UserId, TokenID: req.TokenId})
		return tokenToPB(t), err
	})
}

func (s *storageServer) TokensUsed(ctx context.Context, req *pb.TokensUsedRequest) (*pb.TokensUsedResponse, error) {
	return withStore(s, func(st core.Store) (*pb.TokensUsedResponse, error) {
		used := make(map[string]time.Time, len(req.Used))
		for id, at := range req.Used {
			used[id] = fromTS(at)
		}
		return &pb.TokensUsedResponse{}, st.TokensUsed(ctx, used)
	})
}

func (s *storageServer) SetPassword(ctx context.Context, req *pb.SetPasswordRequest) (*pb.User, error) {
	return withStore(s, func(st core.Store) (*pb.User, error) {
		u, err := st.SetPassword(ctx, core.PasswordReset{Email: req.Email, Hash: req.Hash})
		return userToPB(u), err
	})
}

func (s *storageServer) CreateSession(ctx context.Context, req *pb.Session) (*pb.CreateSessionResponse, error) {
	return withStore(s, func(st core.Store) (*pb.CreateSessionResponse, error) {
		return &pb.CreateSessionResponse{}, st.CreateSession(ctx, sessionFromPB(req))
	})
}

func (s *storageServer) SessionUser(ctx context.Context, req *pb.SessionUserRequest) (*pb.SessionUserResponse, error) {
	return withStore(s, func(st core.Store) (*pb.SessionUserResponse, error) {
		o, err := st.SessionUser(ctx, req.Hash)
		return &pb.SessionUserResponse{Session: sessionToPB(o.Session), User: userToPB(o.User)}, err
	})
}

func (s *storageServer) DeleteSession(ctx context.Context, req *pb.DeleteSessionRequest) (*pb.DeleteSessionResponse, error) {
	return withStore(s, func(st core.Store) (*pb.DeleteSessionResponse, error) {
		return &pb.DeleteSessionResponse{}, st.DeleteSession(ctx, req.Hash)
	})
}

func (s *storageServer) ListSessions(req *pb.ListSessionsRequest, stream grpc.ServerStreamingServer[pb.Session]) error {
	return streamAll(s, func(st core.Store) ([]core.Session, error) {
		return st.ListSessions(stream.Context(), req.UserId)
	}, sessionToPB, stream.Send)
}

func (s *storageServer) ChangeAccount(ctx context.Context, req *pb.AccountChange) (*pb.AccountChanged, error) {
	return withStore(s, func(st core.Store) (*pb.AccountChanged, error) {
		c, err := st.ChangeAccount(ctx, accountChangeFromPB(req))
		return accountChangedToPB(c), err
	})
}
