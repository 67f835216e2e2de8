package plugins

import (
	"context"

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
func (c *StorageClient) DueDeliveries(ctx context.Context, q core.DueQuery) ([]core.Delivery, error) {
	stream, err := c.conn().DueDeliveries(ctx, dueQueryToPB(q))
	return recvAll(stream, err, deliveryFromPB)
}

// RecordAttempt applies the outcome of a delivery attempt.
func (c *StorageClient) RecordAttempt(ctx context.Context, o core.AttemptOutcome) error {
	_, err := c.conn().RecordAttempt(ctx, attemptOutcomeToPB(o))
	return fromStatus(err)
}

// WebhookAttempts lists a subscription's attempts, newest first.
func (c *StorageClient) WebhookAttempts(ctx context.Context, q core.AttemptQuery) ([]core.DeliveryAttempt, error) {
	stream, err := c.conn().WebhookAttempts(ctx, attemptQueryToPB(q))
	return recvAll(stream, err, attemptFromPB)
}

// WebhookQueue counts the pending deliveries.
func (c *StorageClient) WebhookQueue(ctx context.Context) (core.WebhookQueue, error) {
	r, err := c.conn().WebhookQueue(ctx, &pb.WebhookQueueRequest{})
	return call(r, err, webhookQueueFromPB)
}

// TrimWebhooks bounds the delivery queues.
func (c *StorageClient) TrimWebhooks(ctx context.Context, t core.WebhookTrim) (int64, error) {
	r, err := c.conn().TrimWebhooks(ctx, webhookTrimToPB(t))
	return call(r, err, (*pb.TrimWebhooksResponse).GetExpired)
}
