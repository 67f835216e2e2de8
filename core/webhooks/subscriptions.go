// Package webhooks is push subscriptions (docs/webhooks.md): the use
// cases the CLI, the web site and the API call to add, list, enable and
// remove them, with their rules, limits and messages. Delivering what the
// store queues for them is core/webhooks/delivery.
package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/threatd/threatd/core"
)

// Subscriptions are the use cases of push subscriptions, called by the CLI
// (`threatd webhook …`) and the web site's administrators' page: the rules,
// limits and messages live here, once.
type Subscriptions struct {
	Store WebhookStore
	// AllowPrivate is webhooks.allow_private: targets may be private,
	// loopback or link-local addresses.
	AllowPrivate bool
}

// NewSubscription is a subscription asked for.
type NewSubscription struct {
	URL string
	// Events are event types (threat.verified …; none = every one);
	// Ecosystem, when set, keeps only package reports of that registry.
	Events    []string
	Ecosystem string
	// CreatedBy says who added it ("cli", "web:<e-mail>").
	CreatedBy string
}

// Add validates and stores a subscription; its Secret is shown once, by
// the caller, and never again. A bad field is a *core.FieldError naming
// it; more than MaxWebhooks is core.ErrLimit with the message to show.
func (s Subscriptions) Add(ctx context.Context, n NewSubscription) (Webhook, error) {
	w, err := NewWebhook(n.URL, n.Events, n.Ecosystem, n.CreatedBy, time.Now(), s.AllowPrivate)
	if err != nil {
		return Webhook{}, err
	}
	if err := s.Store.CreateWebhook(ctx, w); err != nil {
		if errors.Is(err, core.ErrLimit) {
			return Webhook{}, message{core.ErrLimit, fmt.Sprintf("at most %d webhook subscriptions: remove one first", MaxWebhooks)}
		}
		return Webhook{}, err
	}
	return w, nil
}

// List returns every subscription with its state and delivery counts.
func (s Subscriptions) List(ctx context.Context) ([]Webhook, error) {
	return s.Store.ListWebhooks(ctx)
}

// Remove removes a subscription and its undelivered events.
func (s Subscriptions) Remove(ctx context.Context, id string) error {
	return named(id, s.Store.DeleteWebhook(ctx, id))
}

// Enable enables a disabled subscription again: its waiting events are
// delivered.
func (s Subscriptions) Enable(ctx context.Context, id string) (Webhook, error) {
	w, err := s.Store.EnableWebhook(ctx, id)
	return w, named(id, err)
}

// Attempts returns up to limit delivery attempts of a subscription,
// newest first.
func (s Subscriptions) Attempts(ctx context.Context, id string, limit int) ([]DeliveryAttempt, error) {
	list, err := s.Store.WebhookAttempts(ctx, AttemptQuery{WebhookID: id, Limit: limit})
	return list, named(id, err)
}

// named is the error of a subscription that is not there, as every caller
// shows it.
func named(id string, err error) error {
	if errors.Is(err, core.ErrNotFound) {
		return message{core.ErrNotFound, "no webhook subscription " + id + " (threatd webhook list shows them)"}
	}
	return err
}

// message is a domain error (kind, for errors.Is) with the text every
// caller shows as it is.
type message struct {
	kind error
	text string
}

func (m message) Error() string        { return m.text }
func (m message) Is(target error) bool { return target == m.kind }
