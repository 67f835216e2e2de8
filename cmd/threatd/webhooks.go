package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/webhooks"
)

func webhookCmd() *cobra.Command {
	c := &cobra.Command{Use: "webhook", Short: "Manage push subscriptions: signed webhooks of verified, revised and withdrawn reports (docs/webhooks.md)"}
	c.AddCommand(webhookAddCmd(), webhookListCmd(), webhookRemoveCmd(), webhookEnableCmd(), webhookDeliveriesCmd())
	return c
}

func webhookAddCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "add --url U [--events E,...] [--ecosystem X]",
		Short: "Add a subscription; prints its id and signing secret (whsec_…), shown only this once",
		Long: `Adds a push subscription. Every report verified, revised or withdrawn from
now on (by a reviewer, an import or a scheduled source) is POSTed to the URL
as a Standard Webhooks message, signed with the secret printed here.

  --events     threat.verified,threat.revised,threat.withdrawn (default: these
               three); threat.disputed,threat.kept for disputes (only when
               named); firewall.blocked,firewall.warned for the firewall's
               decisions (only when named)
  --ecosystem  only package reports of this registry (npm, pypi, go, …)

The URL must be http or https; private, loopback and link-local addresses
are refused unless webhooks.allow_private is set.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, _ := cmd.Flags().GetString("url")
			events, _ := cmd.Flags().GetStringSlice("events")
			eco, _ := cmd.Flags().GetString("ecosystem")
			return withEnv(cmd, func(e *env) error {
				w, err := subscriptions(e).Add(cmd.Context(), webhooks.NewSubscription{URL: u, Events: events, Ecosystem: eco, CreatedBy: "cli"})
				if err != nil {
					return friendly(err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "webhook %s added: %s (events %s, ecosystem %s)\nThe signing secret follows; it is not shown again.\n",
					w.ID, w.URL, strings.Join(toWebhookJSON(w).Events, ","), orDash(w.Ecosystem))
				fmt.Fprintf(cmd.OutOrStdout(), "id: %s\nsecret: %s\n", w.ID, w.Secret)
				return nil
			})
		},
	}
	c.Flags().String("url", "", "the target URL (required)")
	c.Flags().StringSlice("events", nil, "event types, comma-separated (default: all)")
	c.Flags().String("ecosystem", "", "only package reports of this registry")
	_ = c.MarkFlagRequired("url")
	return c
}

// subscriptions are the webhook use cases on e's store.
func subscriptions(e *env) webhooks.Subscriptions {
	return webhooks.Subscriptions{Store: e.store, AllowPrivate: e.cfg.Webhooks.AllowPrivate}
}

// webhookJSON is a subscription as `webhook list --json` prints it (never
// its secret).
type webhookJSON struct {
	ID             string     `json:"id"`
	URL            string     `json:"url"`
	Events         []string   `json:"events"`
	Ecosystem      string     `json:"ecosystem,omitempty"`
	State          string     `json:"state"`
	CreatedAt      time.Time  `json:"created_at"`
	FailingSince   *time.Time `json:"failing_since"`
	LastSuccessAt  *time.Time `json:"last_success_at"`
	DisabledAt     *time.Time `json:"disabled_at"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	Pending        int64      `json:"pending"`
	Delivered      int64      `json:"delivered"`
	Failed         int64      `json:"failed"`
	Expired        int64      `json:"expired"`
}

func toWebhookJSON(w webhooks.Webhook) webhookJSON {
	events := make([]string, len(w.Events))
	for i, k := range w.Events {
		events[i] = webhooks.EventType(k)
	}
	return webhookJSON{ID: w.ID, URL: w.URL, Events: events, Ecosystem: w.Ecosystem, State: w.State(),
		CreatedAt: w.CreatedAt, FailingSince: timePtr(w.FailingSince), LastSuccessAt: timePtr(w.LastSuccess), DisabledAt: timePtr(w.DisabledAt),
		DisabledReason: w.DisabledReason, Pending: w.Pending, Delivered: w.Delivered, Failed: w.Failed, Expired: w.Expired}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func webhookListCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the subscriptions: state (active, failing, disabled and why) and delivery counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withEnv(cmd, func(e *env) error {
				hooks, err := subscriptions(e).List(cmd.Context())
				if err != nil {
					return friendly(err)
				}
				out := make([]webhookJSON, len(hooks))
				for i, w := range hooks {
					out[i] = toWebhookJSON(w)
				}
				return printList(cmd.OutOrStdout(), asJSON, out, "ID\tURL\tEVENTS\tECOSYSTEM\tSTATE\tPENDING\tDELIVERED\tFAILED\tEXPIRED", func(w webhookJSON) []string {
					state := w.State
					switch {
					case w.State == "disabled":
						state += " (" + oneLine(w.DisabledReason, 120) + ")"
					case w.State == "failing":
						state += " since " + w.FailingSince.Format(time.RFC3339)
					}
					return []string{w.ID, oneLine(w.URL, 80), strings.Join(w.Events, ","), orDash(w.Ecosystem), state,
						strconv.FormatInt(w.Pending, 10), strconv.FormatInt(w.Delivered, 10), strconv.FormatInt(w.Failed, 10), strconv.FormatInt(w.Expired, 10)}
				})
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return c
}

func webhookRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove ID",
		Short: "Remove a subscription and its undelivered events",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(cmd, func(e *env) error {
				if err := subscriptions(e).Remove(cmd.Context(), args[0]); err != nil {
					return friendly(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "webhook %s removed\n", args[0])
				return nil
			})
		},
	}
}

func webhookEnableCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "enable ID",
		Short: "Enable a disabled subscription again: its waiting events are delivered",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(cmd, func(e *env) error {
				w, err := subscriptions(e).Enable(cmd.Context(), args[0])
				if err != nil {
					return friendly(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "webhook %s enabled: %s\n", w.ID, w.URL)
				return nil
			})
		},
	}
}

// attemptJSON is a delivery attempt as `webhook deliveries --json` prints it.
type attemptJSON struct {
	At        time.Time `json:"at"`
	WebhookID string    `json:"webhook_id"`
	Event     string    `json:"event"`
	ThreatID  string    `json:"threat_id"`
	Status    int       `json:"status"`
	LatencyMS float64   `json:"latency_ms"`
	Error     string    `json:"error,omitempty"`
	State     string    `json:"state"`
}

func webhookDeliveriesCmd() *cobra.Command {
	var asJSON bool
	var limit int
	c := &cobra.Command{
		Use:   "deliveries ID [--json] [--limit N]",
		Short: "List a subscription's delivery attempts, newest first: status, latency, error",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(cmd, func(e *env) error {
				list, err := subscriptions(e).Attempts(cmd.Context(), args[0], limit)
				if err != nil {
					return friendly(err)
				}
				out := make([]attemptJSON, len(list))
				for i, a := range list {
					out[i] = attemptJSON{At: a.At, WebhookID: webhooks.DeliveryID(a.WebhookID, a.Seq), Event: webhooks.EventType(a.Kind), ThreatID: a.ThreatID,
						Status: a.Status, LatencyMS: float64(a.Latency.Microseconds()) / 1000, Error: a.Error, State: a.State}
				}
				return printList(cmd.OutOrStdout(), asJSON, out, "AT\tWEBHOOK-ID\tEVENT\tREPORT\tSTATUS\tLATENCY\tSTATE\tERROR", func(a attemptJSON) []string {
					status := "-"
					if a.Status != 0 {
						status = strconv.Itoa(a.Status)
					}
					return []string{a.At.Format(time.RFC3339), a.WebhookID, a.Event, a.ThreatID, status,
						strconv.FormatFloat(a.LatencyMS, 'f', 1, 64) + "ms", a.State, orDash(oneLine(a.Error, 120))}
				})
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	c.Flags().IntVar(&limit, "limit", 100, fmt.Sprintf("the newest attempts to list (1 to %d)", core.MaxPage))
	return c
}
