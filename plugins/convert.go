package plugins

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/threatd/threatd/core"
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
		SubmissionsPerHour: intPtr32(u.SubmissionsPerHour), CreatedAt: ts(u.CreatedAt),
	}
}

func userFromPB(u *pb.User) core.User {
	if u == nil {
		return core.User{}
	}
	return core.User{
		ID: u.Id, Email: u.Email, Name: u.Name, Tier: core.Tier(u.Tier), Role: core.Role(u.Role),
		SubmissionsPerHour: int32Ptr(u.SubmissionsPerHour), CreatedAt: fromTS(u.CreatedAt),
	}
}

func tokenToPB(t core.Token) *pb.Token {
	return &pb.Token{
		Id: t.ID, UserId: t.UserID, Name: t.Name, Hash: t.Hash, Hint: t.Hint,
		CreatedAt: ts(t.CreatedAt), RevokedAt: tsPtr(t.RevokedAt),
	}
}

func tokenFromPB(t *pb.Token) core.Token {
	if t == nil {
		return core.Token{}
	}
	return core.Token{
		ID: t.Id, UserID: t.UserId, Name: t.Name, Hash: t.Hash, Hint: t.Hint,
		CreatedAt: fromTS(t.CreatedAt), RevokedAt: fromTSPtr(t.RevokedAt),
	}
}

func changeToPB(c core.Change) *pb.Change {
	return &pb.Change{Seq: c.Seq, Entity: string(c.Entity), EntityId: c.EntityID, Op: c.Op, At: ts(c.At)}
}

func changeFromPB(c *pb.Change) core.Change {
	return core.Change{Seq: c.Seq, Entity: core.Entity(c.Entity), EntityID: c.EntityId, Op: c.Op, At: fromTS(c.At)}
}
