package plugins

import (
	"context"

	"google.golang.org/grpc"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

func (s *storageServer) CreateUser(ctx context.Context, req *pb.CreateUserRequest) (*pb.User, error) {
	return unary(s, ctx, userFromPB(req.User), core.Store.CreateUser, userToPB)
}

func (s *storageServer) UserByEmail(ctx context.Context, req *pb.UserByEmailRequest) (*pb.User, error) {
	return unary(s, ctx, req.Email, core.Store.UserByEmail, userToPB)
}

func (s *storageServer) SetUserLimit(ctx context.Context, req *pb.SetUserLimitRequest) (*pb.User, error) {
	return unary(s, ctx, userLimitFromPB(req), core.Store.SetUserLimit, userToPB)
}

func (s *storageServer) SetUserAccess(ctx context.Context, req *pb.SetUserAccessRequest) (*pb.User, error) {
	return unary(s, ctx, userAccessFromPB(req), core.Store.SetUserAccess, userToPB)
}

func (s *storageServer) ListUsers(ctx context.Context, req *pb.ListUsersRequest) (*pb.ListUsersResponse, error) {
	return unary(s, ctx, userQueryFromPB(req), core.Store.ListUsers, usersToPB)
}

func (s *storageServer) CreateToken(ctx context.Context, req *pb.CreateTokenRequest) (*pb.Token, error) {
	return unary(s, ctx, tokenFromPB(req.Token), core.Store.CreateToken, tokenToPB)
}

func (s *storageServer) RevokeToken(ctx context.Context, req *pb.RevokeTokenRequest) (*pb.Token, error) {
	return unary(s, ctx, req.Hash, core.Store.RevokeToken, tokenToPB)
}

func (s *storageServer) Authenticate(ctx context.Context, req *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	return unary(s, ctx, req.Hash, core.Store.Authenticate, tokenOwnerToPB)
}

func (s *storageServer) ListTokens(req *pb.ListTokensRequest, stream grpc.ServerStreamingServer[pb.Token]) error {
	return list(s, stream, req.UserId, core.Store.ListTokens, tokenToPB)
}

func (s *storageServer) RevokeUserToken(ctx context.Context, req *pb.RevokeUserTokenRequest) (*pb.Token, error) {
	return unary(s, ctx, userTokenFromPB(req), core.Store.RevokeUserToken, tokenToPB)
}

func (s *storageServer) TokensUsed(ctx context.Context, req *pb.TokensUsedRequest) (*pb.TokensUsedResponse, error) {
	return run[pb.TokensUsedResponse](s, ctx, tokensUsedFromPB(req), core.Store.TokensUsed)
}

func (s *storageServer) SetPassword(ctx context.Context, req *pb.SetPasswordRequest) (*pb.User, error) {
	return unary(s, ctx, passwordResetFromPB(req), core.Store.SetPassword, userToPB)
}

func (s *storageServer) CreateSession(ctx context.Context, req *pb.Session) (*pb.CreateSessionResponse, error) {
	return run[pb.CreateSessionResponse](s, ctx, sessionFromPB(req), core.Store.CreateSession)
}

func (s *storageServer) SessionUser(ctx context.Context, req *pb.SessionUserRequest) (*pb.SessionUserResponse, error) {
	return unary(s, ctx, req.Hash, core.Store.SessionUser, sessionOwnerToPB)
}

func (s *storageServer) DeleteSession(ctx context.Context, req *pb.DeleteSessionRequest) (*pb.DeleteSessionResponse, error) {
	return run[pb.DeleteSessionResponse](s, ctx, req.Hash, core.Store.DeleteSession)
}

func (s *storageServer) ListSessions(req *pb.ListSessionsRequest, stream grpc.ServerStreamingServer[pb.Session]) error {
	return list(s, stream, req.UserId, core.Store.ListSessions, sessionToPB)
}

func (s *storageServer) ChangeAccount(ctx context.Context, req *pb.AccountChange) (*pb.AccountChanged, error) {
	return unary(s, ctx, accountChangeFromPB(req), core.Store.ChangeAccount, accountChangedToPB)
}
