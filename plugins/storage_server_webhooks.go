package plugins

import (
	"context"

	"google.golang.org/grpc"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

func (s *storageServer) CreateWebhook(ctx context.Context, req *pb.Webhook) (*pb.CreateWebhookResponse, error) {
	return withStore(s, func(st core.Store) (*pb.CreateWebhookResponse, error) {
		return &pb.CreateWebhookResponse{}, st.CreateWebhook(ctx, webhookFromPB(req))
	})
}

func (s *storageServer) ListWebhooks(_ *pb.ListWebhooksRequest, stream grpc.ServerStreamingServer[pb.Webhook]) error {
	return streamAll(s, func(st core.Store) ([]core.Webhook, error) { return st.ListWebhooks(stream.Context()) }, webhookToPB, stream.Send)
}

func (s *storageServer) DeleteWebhook(ctx context.Context, req *pb.WebhookRequest) (*pb.DeleteWebhookResponse, error) {
	return withStore(s, func(st core.Store) (*pb.DeleteWebhookResponse, error) {
		return &pb.DeleteWebhookResponse{}, st.DeleteWebhook(ctx, req.Id)
	})
}

func (s *storageServer) EnableWebhook(ctx context.Context, req *pb.WebhookRequest) (*pb.Webhook, error) {
	return withStore(s, func(st core.Store) (*pb.Webhook, error) {
		w, err := st.EnableWebhook(ctx, req.Id)
		return webhookToPB(w), err
	})
}

func (s *storageServer) DueDeliveries(req *pb.DueDeliveriesRequest, stream grpc.ServerStreamingServer[pb.Delivery]) error {
	return streamAll(s, func(st core.Store) ([]core.Delivery, error) {
		return st.DueDeliveries(stream.Context(), fromTS(req.Now), int(req.Limit))
	}, deliveryToPB, stream.Send)
}

func (s *storageServer) RecordAttempt(ctx context.Context, req *pb.AttemptOutcome) (*pb.RecordAttemptResponse, error) {
	return withStore(s, func(st core.Store) (*pb.RecordAttemptResponse, error) {
		o := core.AttemptOutcome{Attempt: attemptFromPB(req.Attempt), NextAt: fromTS(req.NextAt), Disable: req.Disable}
		if req.HasPayload {
			o.Payload = req.Payload
		}
		return &pb.RecordAttemptResponse{}, st.RecordAttempt(ctx, o)
	})
}

func (s *storageServer) WebhookAttempts(req *pb.WebhookAttemptsRequest, stream grpc.ServerStreamingServer[pb.DeliveryAttempt]) error {
	return streamAll(s, func(st core.Store) ([]core.DeliveryAttempt, error) {
		return st.WebhookAttempts(stream.Context(), req.WebhookId, int(req.Limit))
	}, attemptToPB, stream.Send)
}

func (s *storageServer) WebhookQueue(ctx context.Context, _ *pb.WebhookQueueRequest) (*pb.WebhookQueueResponse, error) {
	return withStore(s, func(st core.Store) (*pb.WebhookQueueResponse, error) {
		q, err := st.WebhookQueue(ctx)
		return &pb.WebhookQueueResponse{Pending: q.Pending, Oldest: ts(q.Oldest)}, err
	})
}

func (s *storageServer) TrimWebhooks(ctx context.Context, req *pb.TrimWebhooksRequest) (*pb.TrimWebhooksResponse, error) {
	return withStore(s, func(st core.Store) (*pb.TrimWebhooksResponse, error) {
		n, err := st.TrimWebhooks(ctx, int(req.MaxPending), fromTS(req.FinishedBefore))
		return &pb.TrimWebhooksResponse{Expired: n}, err
	})
}
