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
				fmt.Fprintf(cmd.ErrOrStderr(), "%d pending report(s)\n", len(pending))
				return nil
			})
		},
	}

	decide := func(d core.Decision) *cobra.Command {
		use, short := "verify ID [--note T] [--as EMAIL]", "Verify a pending report: it is published"
		if d == core.DecisionReject {
			use, short = "reject ID --note T [--as EMAIL]", "Reject a pending report, or withdraw a verified one (a note is required)"
		}
		c := &cobra.Command{
			Use:   use,
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				note, _ := cmd.Flags().GetString("note")
				as, _ := cmd.Flags().GetString("as")
				return withEnv(cmd, func(e *env) error {
					var actor *core.User
					if as != "" {
						u, err := e.store.UserByEmail(cmd.Context(), strings.ToLower(strings.TrimSpace(as)))
						if err != nil {
							return fmt.Errorf("--as: %w", err)
						}
						actor = &u
					}
					t, err := core.NewReports(e.store, core.Limits{}).Decide(cmd.Context(), args[0], d, note, actor)
					if err != nil {
						return friendly(err)
					}
					who := core.SystemReviewer
					if actor != nil {
						who = actor.Name
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s is now %s (by %s)\n", t, t.Status, who)
					return nil
				})
			},
		}
		c.Flags().String("note", "", "why (required to reject)")
		c.Flags().String("as", "", "the reviewer's e-mail (default: the built-in reviewer threatd)")
		return c
	}

	review.AddCommand(list, decide(core.DecisionVerify), decide(core.DecisionReject))
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
