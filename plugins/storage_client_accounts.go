package plugins

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

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
func (c *StorageClient) SetUserLimit(ctx context.Context, l core.UserLimit) (core.User, error) {
	r, err := c.conn().SetUserLimit(ctx, &pb.SetUserLimitRequest{Email: l.Email, SubmissionsPerHour: intPtr32(l.PerHour)})
	return call(r, err, userFromPB)
}

// SetUserAccess changes a user's tier and role (nil = unchanged).
func (c *StorageClient) SetUserAccess(ctx context.Context, a core.UserAccess) (core.User, error) {
	req := &pb.SetUserAccessRequest{Email: a.Email}
	if a.Tier != nil {
		req.Tier = proto.String(string(*a.Tier))
	}
	if a.Role != nil {
		req.Role = proto.String(string(*a.Role))
	}
	r, err := c.conn().SetUserAccess(ctx, req)
	return call(r, err, userFromPB)
}

// ListUsers returns a page of users in e-mail order.
func (c *StorageClient) ListUsers(ctx context.Context, q core.UserQuery) ([]core.User, error) {
	r, err := c.conn().ListUsers(ctx, &pb.ListUsersRequest{After: q.After, Limit: int32(q.Limit)})
	return call(r, err, func(r *pb.ListUsersResponse) []core.User {
		out := make([]core.User, len(r.Users))
		for i, u := range r.Users {
			out[i] = userFromPB(u)
		}
		return out
	})
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
func (c *StorageClient) Authenticate(ctx context.Context, hash string) (core.TokenOwner, error) {
	r, err := c.conn().Authenticate(ctx, &pb.AuthenticateRequest{Hash: hash})
	return call(r, err, func(r *pb.AuthenticateResponse) core.TokenOwner {
		return core.TokenOwner{Token: tokenFromPB(r.Token), User: userFromPB(r.User)}
	})
}

// ListTokens returns a user's tokens.
func (c *StorageClient) ListTokens(ctx context.Context, userID string) ([]core.Token, error) {
	stream, err := c.conn().ListTokens(ctx, &pb.ListTokensRequest{UserId: userID})
	return recvAll(stream, err, tokenFromPB)
}

// RevokeUserToken revokes one of a user's tokens by id.
func (c *StorageClient) RevokeUserToken(ctx context.Context, t core.UserToken) (core.Token, error) {
	r, err := c.conn().RevokeUserToken(ctx, &pb.RevokeUserTokenRequest{UserId: t.UserID, TokenId: t.TokenID})
	return call(r, err, tokenFromPB)
}

// TokensUsed records when tokens were last used.
func (c *StorageClient) TokensUsed(ctx context.Context, used map[string]time.Time) error {
	req := &pb.TokensUsedRequest{Used: make(map[string]*timestamppb.Timestamp, len(used))}
	for id, at := range used {
		req.Used[id] = ts(at)
	}
	_, err := c.conn().TokensUsed(ctx, req)
	return fromStatus(err)
}

// SetPassword stores a user's password hash.
func (c *StorageClient) SetPassword(ctx context.Context, p core.PasswordReset) (core.User, error) {
	r, err := c.conn().SetPassword(ctx, &pb.SetPasswordRequest{Email: p.Email, Hash: p.Hash})
	return call(r, err, userFromPB)
}

// CreateSession stores a web session.
func (c *StorageClient) CreateSession(ctx context.Context, s core.Session) error {
	_, err := c.conn().CreateSession(ctx, sessionToPB(s))
	return fromStatus(err)
}

// SessionUser resolves a session hash to the session and its user.
func (c *StorageClient) SessionUser(ctx context.Context, hash string) (core.SessionOwner, error) {
	r, err := c.conn().SessionUser(ctx, &pb.SessionUserRequest{Hash: hash})
	return call(r, err, func(r *pb.SessionUserResponse) core.SessionOwner {
		return core.SessionOwner{Session: sessionFromPB(r.Session), User: userFromPB(r.User)}
	})
}

// DeleteSession ends a web session.
func (c *StorageClient) DeleteSession(ctx context.Context, hash string) error {
	_, err := c.conn().DeleteSession(ctx, &pb.DeleteSessionRequest{Hash: hash})
	return fromStatus(err)
}

// ListSessions returns a user's unexpired sessions.
func (c *StorageClient) ListSessions(ctx context.Context, userID string) ([]core.Session, error) {
	stream, err := c.conn().ListSessions(ctx, &pb.ListSessionsRequest{UserId: userID})
	return recvAll(stream, err, sessionFromPB)
}

// ChangeAccount applies one change to an account.
func (c *StorageClient) ChangeAccount(ctx context.Context, ch core.AccountChange) (core.AccountChanged, error) {
	r, err := c.conn().ChangeAccount(ctx, accountChangeToPB(ch))
	return call(r, err, accountChangedFromPB)
}
