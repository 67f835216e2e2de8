package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/core"
)

func reviewCmd() *cobra.Command {
	review := &cobra.Command{Use: "review", Short: "Review reports: list, verify, reject"}

	list := &cobra.Command{
		Use:   "list",
		Short: "List pending reports, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withEnv(cmd, func(e *env) error {
				pending, err := e.store.ListPending(cmd.Context(), 0)
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tTYPE\tIDENTIFIER\tREGISTRY\tSEVERITY\tSUBMITTED\tDESCRIPTION")
				for _, t := range pending {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.ReportType, oneLine(t.ResourceIdentifier, 60),
						orDash(t.Registry), orDash(string(t.Details.SeverityLevel)), t.CreatedAt.Format(time.RFC3339),
						oneLine(t.Details.ThreatDescription, 60))
				}
				if err := w.Flush(); err != nil {
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
					proposed, err := core.ApplyPatch(cur, r.Patch, time.Now())
					if err != nil {
						fmt.Fprintf(cmd.OutOrStdout(), "    (no longer applies: %v)\n", err)
						continue
					}
					for _, ch := range core.Diff(cur.Details, proposed.Details) {
						fmt.Fprintf(cmd.OutOrStdout(), "    %s:\n      - %s\n      + %s\n", ch.Field, oneLine(orDash(ch.Old), 100), oneLine(orDash(ch.New), 100))
					}
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%d pending report(s), %d pending revision(s)\n", len(pending), len(revs))
				return nil
			})
		},
	}

	decide := func(d core.Decision) *cobra.Command {
		use, short := "verify ID... [--note T] [--as EMAIL]", "Verify pending reports: they are published"
		if d == core.DecisionReject {
			use, short = "reject ID... --note T [--as EMAIL]", "Reject pending reports, or withdraw verified ones (a note is required)"
		}
		return reviewCommand(use, short, cobra.MinimumNArgs(1), func(cmd *cobra.Command, r *core.Reports, actor *core.User, note string, args []string) error {
			who := core.SystemReviewer
			if actor != nil {
				who = actor.Name
			}
			// Each report is its own transaction; the first failure stops.
			for _, id := range args {
				t, err := r.Decide(cmd.Context(), id, d, note, actor)
				if err != nil {
					return fmt.Errorf("%s: %w", id, friendly(err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s is now %s (by %s)\n", t, t.Status, who)
			}
			return nil
		})
	}

	decideRevision := func(approve bool) *cobra.Command {
		use, short := "approve-revision REV [--note T] [--as EMAIL]", "Approve a pending revision: it is applied to the report"
		if !approve {
			use, short = "reject-revision REV --note T [--as EMAIL]", "Reject a pending revision: the report stays as it is"
		}
		return reviewCommand(use, short, cobra.ExactArgs(1), func(cmd *cobra.Command, r *core.Reports, actor *core.User, note string, args []string) error {
			t, rev, err := r.DecideRevision(cmd.Context(), args[0], approve, note, actor)
			if err != nil {
				return friendly(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revision %d of %s is now %s\n", rev.Number, t, rev.State)
			return nil
		})
	}

	review.AddCommand(list, decide(core.DecisionVerify), decide(core.DecisionReject), decideRevision(true), decideRevision(false))
	return review
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
	c.Flags().String("note", "", "why (required to reject)")
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
