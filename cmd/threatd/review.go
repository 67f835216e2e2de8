package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

// reviewListPage is how many pending reports review list reads at a time.
const reviewListPage = 1000

func reviewCmd() *cobra.Command {
	review := &cobra.Command{Use: "review", Short: "Review reports: list, verify, reject"}

	var listLimit int
	list := &cobra.Command{
		Use:   "list [--limit N]",
		Short: "List pending reports, oldest first (all of them unless --limit), then pending revisions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listLimit < 0 {
				return fmt.Errorf("invalid --limit %d: give 0 (every pending report) or a positive number", listLimit)
			}
			return withEnv(cmd, func(e *env) error {
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tVERSION\tTYPE\tIDENTIFIER\tREGISTRY\tSEVERITY\tSUBMITTED\tDESCRIPTION")
				// Page through the queue by keyset, a bounded page at a time.
				shown, total := 0, 0
				q := core.PendingQuery{Limit: reviewListPage}
				for listLimit == 0 || shown < listLimit {
					if listLimit > 0 {
						q.Limit = min(reviewListPage, listLimit-shown)
					}
					pl, err := e.store.ListPending(cmd.Context(), q)
					page, n := pl.Threats, pl.Total
					if err != nil {
						return err
					}
					total = n
					for _, t := range page {
						fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Version, t.ReportType, oneLine(t.ResourceIdentifier, 60),
							orDash(t.Registry), orDash(string(t.Details.SeverityLevel)), t.CreatedAt.Format(time.RFC3339),
							oneLine(t.Details.ThreatDescription, 60))
					}
					shown += len(page)
					if len(page) < q.Limit {
						break
					}
					last := page[len(page)-1]
					q.AfterCreatedAt, q.AfterID = last.CreatedAt, last.ID
				}
				if err := w.Flush(); err != nil {
					return err
				}
				disputed, err := listDisputed(cmd, e)
				if err != nil {
					return err
				}
				revs, err := e.store.ListPendingRevisions(cmd.Context())
				if err != nil {
					return err
				}
				if len(revs) > 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "\nPENDING REVISIONS (decide with approve-revision REV / reject-revision REV --note T)")
				}
				for _, r := range revs {
					cur, err := e.store.GetThreat(cmd.Context(), r.ThreatID)
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "REV %s  revision %d of %s, %s, by %s at %s\n", r.ID, r.Number, cur, cur.Status,
						r.AuthorName, r.CreatedAt.Format(time.RFC3339))
					changes, err := core.ProposedChanges(cur, r.Patch)
					if err != nil {
						fmt.Fprintf(cmd.OutOrStdout(), "    (no longer applies: %v)\n", err)
						continue
					}
					for _, ch := range changes {
						fmt.Fprintf(cmd.OutOrStdout(), "    %s:\n      - %s\n      + %s\n", ch.Field, oneLine(orDash(ch.Old), 100), oneLine(orDash(ch.New), 100))
					}
				}
				if shown < total {
					// Reports submitted while the list was read come on the next run.
					fmt.Fprintf(cmd.ErrOrStderr(), "showing %d of %d pending report(s) (--limit 0 lists them all), %d disputed report(s), %d pending revision(s)\n", shown, total, disputed, len(revs))
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "%d pending report(s), %d disputed report(s), %d pending revision(s)\n", shown, disputed, len(revs))
				}
				return nil
			})
		},
	}
	list.Flags().IntVar(&listLimit, "limit", 0, "list at most N pending reports (0: all of them)")

	decide := func(d core.Decision) *cobra.Command {
		use, short := "verify ID... [--version N] [--note T] [--as EMAIL]", "Verify pending reports at the version you read (review show): they are published"
		if d == core.DecisionReject {
			use, short = "reject ID... [--version N] --note T [--as EMAIL]", "Reject pending reports, or withdraw verified ones (a note is required)"
		}
		var version int
		c := reviewCommand(use, short, cobra.MinimumNArgs(1), func(cmd *cobra.Command, r *core.Reports, actor *core.User, note string, args []string) error {
			if version < 1 {
				return fmt.Errorf("invalid --version: %d (versions start at 1)", version)
			}
			who := core.SystemReviewer
			if actor != nil {
				who = actor.Name
			}
			// Each report is its own transaction; the first failure stops.
			for _, id := range args {
				t, err := r.Decide(cmd.Context(), id, version, d, note, actor)
				if err != nil {
					return fmt.Errorf("%s: %w", id, friendly(err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s version %d is now %s (by %s)\n", t, t.Version, t.Status, who)
			}
			return nil
		})
		if d == core.DecisionVerify {
			c.Flags().Lookup("note").Usage = "a note kept with the decision (optional)"
		}
		c.Flags().IntVar(&version, "version", 1, "the version of the report you read and decide on (review list / review show print it); refused if the report has changed since")
		return c
	}

	decideRevision := func(approve bool) *cobra.Command {
		use, short := "approve-revision REV [--note T] [--as EMAIL]", "Approve a pending revision: it is applied to the report"
		if !approve {
			use, short = "reject-revision REV --note T [--as EMAIL]", "Reject a pending revision: the report stays as it is"
		}
		c := reviewCommand(use, short, cobra.ExactArgs(1), func(cmd *cobra.Command, r *core.Reports, actor *core.User, note string, args []string) error {
			t, rev, err := r.DecideRevision(cmd.Context(), args[0], approve, note, actor)
			if err != nil {
				return friendly(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revision %d of %s is now %s\n", rev.Number, t, rev.State)
			return nil
		})
		if approve {
			c.Flags().Lookup("note").Usage = "a note kept with the decision (optional)"
		}
		return c
	}

	keep := reviewCommand("keep ID... --note T [--as EMAIL]", "Keep disputed reports published: the dispute closes, votes count again from now",
		cobra.MinimumNArgs(1), func(cmd *cobra.Command, r *core.Reports, actor *core.User, note string, args []string) error {
			who := core.SystemReviewer
			if actor != nil {
				who = actor.Name
			}
			for _, id := range args {
				t, err := r.Decide(cmd.Context(), id, 0, core.DecisionKeep, note, actor)
				if err != nil {
					return fmt.Errorf("%s: %w", id, friendly(err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s stays %s; its dispute is closed (by %s)\n", t, t.Status, who)
			}
			return nil
		})

	review.AddCommand(list, showCmd(), decide(core.DecisionVerify), decide(core.DecisionReject), keep, decideRevision(true), decideRevision(false))
	return review
}

// listDisputed prints the disputed reports of the queue, oldest dispute
// first, with their counted votes, and returns how many there are.
func listDisputed(cmd *cobra.Command, e *env) (int, error) {
	q := community.DisputeQuery{Limit: reviewListPage}
	n := 0
	for {
		pl, err := e.store.ListDisputed(cmd.Context(), q)
		if err != nil {
			return n, err
		}
		if n == 0 && len(pl.Threats) > 0 {
			fmt.Fprintln(cmd.OutOrStdout(), "\nDISPUTED (still published; keep with review keep ID --note T, withdraw with review reject ID --note T)")
		}
		for _, t := range pl.Threats {
			votes, err := e.store.DisputeVotes(cmd.Context(), t.ID)
			if err != nil {
				return n, err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s  %s %s, %s, disputed %s by %s\n", t.ID, t.ReportType, oneLine(t.ResourceIdentifier, 60),
				orDash(t.Registry), t.DisputedAt.UTC().Format(time.RFC3339), core.Count(len(votes), "vote", "votes"))
			for _, v := range votes {
				if v.Note != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "    %s\n", oneLine(visible(v.Note), 120))
				}
			}
		}
		n += len(pl.Threats)
		if len(pl.Threats) < q.Limit {
			return n, nil
		}
		last := pl.Threats[len(pl.Threats)-1]
		q.AfterDisputedAt, q.AfterID = *last.DisputedAt, last.ID
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine shortens s to one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// reviewCommand builds a review decision command: --note and --as, storage
// opened, the reviewer resolved, then run.
func reviewCommand(use, short string, args cobra.PositionalArgs, run func(cmd *cobra.Command, r *core.Reports, actor *core.User, note string, args []string) error) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			note, _ := cmd.Flags().GetString("note")
			as, _ := cmd.Flags().GetString("as")
			return withEnv(cmd, func(e *env) error {
				actor, err := reviewer(cmd, e, as)
				if err != nil {
					return err
				}
				return run(cmd, core.NewReports(e.store, core.Limits{}), actor, note, args)
			})
		},
	}
	c.Flags().String("note", "", "why (required)")
	c.Flags().String("as", "", "the reviewer's e-mail (default: the built-in reviewer threatd)")
	return c
}

// reviewer resolves --as to a user (nil: the built-in reviewer).
func reviewer(cmd *cobra.Command, e *env, as string) (*core.User, error) {
	if as == "" {
		return nil, nil
	}
	u, err := e.store.UserByEmail(cmd.Context(), strings.ToLower(strings.TrimSpace(as)))
	if err != nil {
		return nil, fmt.Errorf("--as: %w", err)
	}
	return &u, nil
}

// showCmd is `threatd review show ID`: the whole report as a reviewer must
// read it before deciding (docs/cli.md), with the version to decide on.
func showCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Print a report in full (every field, the whole payload, its state and version) before deciding on it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(cmd, func(e *env) error {
				t, err := e.store.GetThreat(cmd.Context(), args[0])
				if err != nil {
					return friendly(err)
				}
				events, err := e.store.ReviewEvents(cmd.Context(), t.ID)
				if err != nil {
					return err
				}
				if err := writeReport(cmd.OutOrStdout(), t, events); err != nil {
					return err
				}
				if t.DisputedAt == nil {
					return nil
				}
				votes, err := e.store.DisputeVotes(cmd.Context(), t.ID)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "\nDISPUTED since %s: %s\n", t.DisputedAt.UTC().Format(time.RFC3339), core.Count(len(votes), "false-positive vote", "false-positive votes"))
				for _, v := range votes {
					fmt.Fprintf(out, "  %s  %s\n", v.CreatedAt.UTC().Format(time.RFC3339), orDash(oneLine(visible(v.Note), 200)))
				}
				_, err = fmt.Fprintf(out, "Keep it with: threatd review keep %s --note …  (or withdraw: review reject %s --version %d --note …)\n", t.ID, t.ID, max(t.Version, 1))
				return err
			})
		},
	}
}

// writeReport prints every field of t. Text from the submitter is shown so
// that nothing can hide from the reviewer: carriage returns, which a
// terminal would use to overwrite a line, and invisible format characters
// (bidirectional overrides, zero-width characters) are written as escapes.
func writeReport(out io.Writer, t core.Threat, events []core.ReviewEvent) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	d := t.Details
	stamp := func(p *time.Time) string {
		if p == nil {
			return "-"
		}
		return p.UTC().Format(time.RFC3339)
	}
	rows := [][2]string{
		{"ID", t.ID}, {"VERSION", strconv.Itoa(max(t.Version, 1))}, {"STATUS", string(t.Status)},
		{"TYPE", string(t.ReportType)}, {"IDENTIFIER", visible(t.ResourceIdentifier)}, {"REGISTRY", orDash(t.Registry)},
		{"PACKAGE NAME", orDash(visible(d.PackageName))}, {"PUBLISHER", orDash(visible(d.Publisher))},
		{"SEVERITY", orDash(string(d.SeverityLevel))}, {"VERSIONS", orDash(visible(d.VersionInfo))},
		{"FIRST SEEN", stamp(d.FirstSeen)}, {"LAST SEEN", stamp(d.LastSeen)},
		{"TAGS", orDash(visible(strings.Join(d.Tags, ", ")))}, {"CONTRIBUTORS", orDash(visible(strings.Join(d.Contributors, ", ")))},
		{"CONTACT", orDash(visible(d.ContactEmail))}, {"OSV ADVISORY", orDash(visible(d.OSVAdvisoryURL))},
		{"SUBMITTED", t.CreatedAt.UTC().Format(time.RFC3339)}, {"UPDATED", t.UpdatedAt.UTC().Format(time.RFC3339)},
		{"VERIFIED", stamp(t.VerifiedAt)},
	}
	if d.DownloadCount != nil {
		rows = append(rows, [2]string{"DOWNLOADS", strconv.FormatInt(*d.DownloadCount, 10)})
	}
	if t.Source != "" {
		rows = append(rows, [2]string{"IMPORTED FROM", t.Source + " " + visible(t.UpstreamID)})
	}
	evidence := strings.Split(d.EvidenceReferences, "|")
	if d.EvidenceReferences == "" {
		evidence = []string{"-"}
	}
	for i, u := range evidence {
		label := ""
		if i == 0 {
			label = "EVIDENCE"
		}
		rows = append(rows, [2]string{label, visible(u)})
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\n", r[0], r[1])
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nTHREAT DESCRIPTION\n%s\n", indent(visible(d.ThreatDescription)))
	payload := "-"
	if d.PayloadDescription != "" {
		payload = visible(d.PayloadDescription)
	}
	fmt.Fprintf(out, "\nPAYLOAD DESCRIPTION (%d characters)\n%s\n", utf8.RuneCountInString(d.PayloadDescription), indent(payload))
	if len(events) > 0 {
		fmt.Fprintln(out, "\nHISTORY")
		for _, ev := range events {
			line := fmt.Sprintf("  %s  %s by %s", ev.At.UTC().Format(time.RFC3339), ev.Action, visible(ev.ActorName))
			if ev.Note != "" {
				line += ": " + oneLine(visible(ev.Note), 200)
			}
			fmt.Fprintln(out, line)
		}
	}
	switch t.Status {
	case core.StatusPending:
		_, err := fmt.Fprintf(out, "\nDecide on this text with: threatd review verify %s --version %d  (or reject %s --version %d --note …)\n", t.ID, max(t.Version, 1), t.ID, max(t.Version, 1))
		return err
	case core.StatusVerified:
		_, err := fmt.Fprintf(out, "\nWithdraw with: threatd review reject %s --version %d --note …\n", t.ID, max(t.Version, 1))
		return err
	}
	return nil
}

// visible escapes what a terminal would not show as written: carriage
// returns and Unicode format characters (category Cf: bidirectional
// overrides, zero-width spaces and joiners).
func visible(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == '\r' || unicode.Is(unicode.Cf, r) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, "<U+%04X>", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
