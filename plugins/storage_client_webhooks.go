package plugins

import (
	"context"
	"time"

	"github.com/threatd/threatd/core"
	pb "github.com/threatd/threatd/plugins/proto/v1"
)

// CreateWebhook stores a subscription.
func (c *StorageClient) CreateWebhook(ctx context.Context, w core.Webhook) error {
	_, err := c.conn().CreateWebhook(ctx, webhookToPB(w))
	return fromStatus(err)
}

// ListWebhooks returns every subscription with its delivery counts.
func (c *StorageClient) ListWebhooks(ctx context.Context) ([]core.Webhook, error) {
	stream, err := c.conn().ListWebhooks(ctx, &pb.ListWebhooksRequest{})
	return recvAll(stream, err, webhookFromPB)
}

// DeleteWebhook removes a subscription and its queue.
func (c *StorageClient) DeleteWebhook(ctx context.Context, id string) error {
	_, err := c.conn().DeleteWebhook(ctx, &pb.WebhookRequest{Id: id})
	return fromStatus(err)
}

// EnableWebhook enables a disabled subscription again.
func (c *StorageClient) EnableWebhook(ctx context.Context, id string) (core.Webhook, error) {
	r, err := c.conn().EnableWebhook(ctx, &pb.WebhookRequest{Id: id})
	return call(r, err, webhookFromPB)
}

// DueDeliveries returns the pending deliveries due at now.
func (c *StorageClient) DueDeliveries(ctx context.Context, now time.Time, limit int) ([]core.Delivery, error) {
	stream, err := c.conn().DueDeliveries(ctx, &pb.DueDeliveriesRequest{Now: ts(now), Limit: int32(limit)})
	return recvAll(stream, err, deliveryFromPB)
}

// RecordAttempt applies the outcome of a delivery attempt.
func (c *StorageClient) RecordAttempt(ctx context.Context, o core.AttemptOutcome) error {
	_, err := c.conn().RecordAttempt(ctx, &pb.AttemptOutcome{Attempt: attemptToPB(o.Attempt), NextAt: ts(o.NextAt),
		Payload: o.Payload, HasPayload: o.Payload != nil, Disable: o.Disable})
	return fromStatus(err)
}

// WebhookAttempts lists a subscription's attempts, newest first.
func (c *StorageClient) WebhookAttempts(ctx context.Context, webhookID string, limit int) ([]core.DeliveryAttempt, error) {
	stream, err := c.conn().WebhookAttempts(ctx, &pb.WebhookAttemptsRequest{WebhookId: webhookID, Limit: int32(limit)})
	return recvAll(stream, err, attemptFromPB)
}

// WebhookQueue counts the pending deliveries.
func (c *StorageClient) WebhookQueue(ctx context.Context) (core.WebhookQueue, error) {
	r, err := c.conn().WebhookQueue(ctx, &pb.WebhookQueueRequest{})
	return call(r, err, func(r *pb.WebhookQueueResponse) core.WebhookQueue {
		return core.WebhookQueue{Pending: r.Pending, Oldest: fromTS(r.Oldest)}
	})
}

// TrimWebhooks bounds the delivery queues.
func (c *StorageClient) TrimWebhooks(ctx context.Context, maxPending int, finishedBefore time.Time) (int64, error) {
	r, err := c.conn().TrimWebhooks(ctx, &pb.TrimWebhooksRequest{MaxPending: int32(min(maxPending, 1<<31-1)), FinishedBefore: ts(finishedBefore)})
	return call(r, err, (*pb.TrimWebhooksResponse).GetExpired)
}
