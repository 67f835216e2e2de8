package plugins

import (
	"context"
	"time"

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
	r, err := c.conn().SetUserLimit(ctx, userLimitToPB(l))
	return call(r, err, userFromPB)
}

// SetUserAccess changes a user's tier and role (nil = unchanged).
func (c *StorageClient) SetUserAccess(ctx context.Context, a core.UserAccess) (core.User, error) {
	r, err := c.conn().SetUserAccess(ctx, userAccessToPB(a))
	return call(r, err, userFromPB)
}

// ListUsers returns a page of users in e-mail order.
func (c *StorageClient) ListUsers(ctx context.Context, q core.UserQuery) ([]core.User, error) {
	r, err := c.conn().ListUsers(ctx, userQueryToPB(q))
	return call(r, err, usersFromPB)
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
	return call(r, err, tokenOwnerFromPB)
}

// ListTokens returns a user's tokens.
func (c *StorageClient) ListTokens(ctx context.Context, userID string) ([]core.Token, error) {
	stream, err := c.conn().ListTokens(ctx, &pb.ListTokensRequest{UserId: userID})
	return recvAll(stream, err, tokenFromPB)
}

// RevokeUserToken revokes one of a user's tokens by id.
func (c *StorageClient) RevokeUserToken(ctx context.Context, t core.UserToken) (core.Token, error) {
	r, err := c.conn().RevokeUserToken(ctx, userTokenToPB(t))
	return call(r, err, tokenFromPB)
}

// TokensUsed records when tokens were last used.
func (c *StorageClient) TokensUsed(ctx context.Context, used map[string]time.Time) error {
	_, err := c.conn().TokensUsed(ctx, tokensUsedToPB(used))
	return fromStatus(err)
}

// SetPassword stores a user's password hash.
func (c *StorageClient) SetPassword(ctx context.Context, p core.PasswordReset) (core.User, error) {
	r, err := c.conn().SetPassword(ctx, passwordResetToPB(p))
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
	return call(r, err, sessionOwnerFromPB)
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
