package plugins

import (
	"context"

	"google.golang.org/grpc"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

func (s *storageServer) CreateWebhook(ctx context.Context, req *pb.Webhook) (*pb.CreateWebhookResponse, error) {
	return run[pb.CreateWebhookResponse](s, ctx, webhookFromPB(req), core.Store.CreateWebhook)
}

func (s *storageServer) ListWebhooks(_ *pb.ListWebhooksRequest, stream grpc.ServerStreamingServer[pb.Webhook]) error {
	return list(s, stream, struct{}{}, none(core.Store.ListWebhooks), webhookToPB)
}

func (s *storageServer) DeleteWebhook(ctx context.Context, req *pb.WebhookRequest) (*pb.DeleteWebhookResponse, error) {
	return run[pb.DeleteWebhookResponse](s, ctx, req.Id, core.Store.DeleteWebhook)
}

func (s *storageServer) EnableWebhook(ctx context.Context, req *pb.WebhookRequest) (*pb.Webhook, error) {
	return unary(s, ctx, req.Id, core.Store.EnableWebhook, webhookToPB)
}

func (s *storageServer) DueDeliveries(req *pb.DueDeliveriesRequest, stream grpc.ServerStreamingServer[pb.Delivery]) error {
	return list(s, stream, dueQueryFromPB(req), core.Store.DueDeliveries, deliveryToPB)
}

func (s *storageServer) RecordAttempt(ctx context.Context, req *pb.AttemptOutcome) (*pb.RecordAttemptResponse, error) {
	return run[pb.RecordAttemptResponse](s, ctx, attemptOutcomeFromPB(req), core.Store.RecordAttempt)
}

func (s *storageServer) WebhookAttempts(req *pb.WebhookAttemptsRequest, stream grpc.ServerStreamingServer[pb.DeliveryAttempt]) error {
	return list(s, stream, attemptQueryFromPB(req), core.Store.WebhookAttempts, attemptToPB)
}

func (s *storageServer) WebhookQueue(ctx context.Context, _ *pb.WebhookQueueRequest) (*pb.WebhookQueueResponse, error) {
	return unary(s, ctx, struct{}{}, none(core.Store.WebhookQueue), webhookQueueToPB)
}

func (s *storageServer) TrimWebhooks(ctx context.Context, req *pb.TrimWebhooksRequest) (*pb.TrimWebhooksResponse, error) {
	return unary(s, ctx, webhookTrimFromPB(req), core.Store.TrimWebhooks, func(n int64) *pb.TrimWebhooksResponse {
		return &pb.TrimWebhooksResponse{Expired: n}
	})
}
