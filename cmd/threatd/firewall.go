package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

func firewallCmd() *cobra.Command {
	c := &cobra.Command{Use: "firewall", Short: "The registry firewall's policy: waivers, decisions and held versions (docs/firewall.md)"}
	c.AddCommand(firewallWaiveCmd(), firewallWaiversCmd(), firewallUnwaiveCmd(), firewallDecisionsCmd(), firewallHeldCmd())
	return c
}

// badInput is exit status 2 for input the domain refuses (a field named).
func badInput(err error) error {
	var fe *core.FieldError
	if errors.As(err, &fe) {
		return &exitError{code: 2, err: friendly(err)}
	}
	return friendly(err)
}

func firewallWaiveCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "waive ECOSYSTEM NAME[@VERSION] --rule R --reason TEXT --for DURATION",
		Short: "Lift one rule for a package version (or a name glob) for a time; prints the waiver id",
		Long: `Lifts one rule (malicious, quarantine or install_scripts) for one package
version, or every version of NAME (a name or a glob such as @acme/*), for
DURATION (72h, 7d; at most 366d), with a reason. Every daemon applies it
within cache.freshness; each use is recorded as a decision "waived".`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			rule, _ := cmd.Flags().GetString("rule")
			reason, _ := cmd.Flags().GetString("reason")
			dur, _ := cmd.Flags().GetString("for")
			name, version := args[1], ""
			// npm scopes start with @: the version is after the last @
			// that is not the first character.
			if i := strings.LastIndex(name, "@"); i > 0 {
				name, version = name[:i], name[i+1:]
				if version == "" {
					return &exitError{code: 2, err: errors.New("invalid NAME@VERSION argument: the version after @ is empty")}
				}
			}
			by, _ := cmd.Flags().GetString("as")
			return withEnv(cmd, func(e *env) error {
				w, err := firewall.WaiverService{Store: e.store}.Waive(cmd.Context(),
					firewall.WaiverRequest{Ecosystem: args[0], Name: name, Version: version, Rule: rule, Reason: reason, For: dur}, by, core.RoleAdmin)
				if err != nil {
					return badInput(err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "waiver %s: rule %s lifted for %s %s%s until %s\n", w.ID, w.Rule, w.Ecosystem, w.Name,
					map[bool]string{true: "@" + w.Version, false: " (every version)"}[w.Version != ""], w.Until.Format(time.RFC3339))
				fmt.Fprintln(cmd.OutOrStdout(), w.ID)
				return nil
			})
		},
	}
	c.Flags().String("rule", "", "the rule lifted: malicious, quarantine or install_scripts (required)")
	c.Flags().String("reason", "", "why (required; recorded)")
	c.Flags().String("for", "", "how long: 72h, 7d … (required)")
	c.Flags().String("as", "cli", "who makes it (recorded)")
	return c
}

func firewallWaiversCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "waivers [--json]",
		Short: "List the waivers in force",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withEnv(cmd, func(e *env) error {
				ws, err := firewall.WaiverService{Store: e.store}.InForce(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					out := make([]firewall.WaiverJSON, len(ws))
					for i, w := range ws {
						out[i] = firewall.ShowWaiver(w)
					}
					return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tECOSYSTEM\tNAME\tVERSION\tRULE\tUNTIL\tBY\tREASON")
				for _, w := range ws {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", w.ID, w.Ecosystem, w.Name, orDash(w.Version), w.Rule,
						w.Until.Format(time.RFC3339), w.CreatedBy, w.Reason)
				}
				return tw.Flush()
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func firewallUnwaiveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "unwaive ID",
		Short: "End a waiver now",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(cmd, func(e *env) error {
				if err := (firewall.WaiverService{Store: e.store}).Remove(cmd.Context(), args[0]); err != nil {
					return friendly(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "waiver %s removed\n", args[0])
				return nil
			})
		},
	}
}

func firewallDecisionsCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "decisions [--since T] [--json]",
		Short: "List the firewall's decisions (refused, warned, monitored, waived), oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := firewall.FirewallDecisionQuery{Limit: 1000}
			if v, _ := cmd.Flags().GetString("since"); v != "" {
				t, err := time.Parse(time.RFC3339, v)
				if err != nil {
					d, derr := firewall.ParseFor("since", v)
					if derr != nil {
						return &exitError{code: 2, err: fmt.Errorf("invalid --since: %q is neither an RFC 3339 time nor a duration such as 24h", v)}
					}
					t = time.Now().Add(-d)
				}
				q.Since = t
			}
			return withEnv(cmd, func(e *env) error {
				var tw *tabwriter.Writer
				enc := json.NewEncoder(cmd.OutOrStdout())
				if !asJSON {
					tw = tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "TIME\tECOSYSTEM\tPACKAGE\tRULE\tACTION\tUSER\tTHREAT IDS / UNTIL")
				}
				for {
					page, err := e.store.ListDecisions(cmd.Context(), q)
					if err != nil {
						return err
					}
					for _, d := range page.Decisions {
						if asJSON {
							// One JSON object a line: a SIEM reads it as it comes.
							if err := enc.Encode(firewall.ShowDecision(d)); err != nil {
								return err
							}
							continue
						}
						extra := strings.Join(d.ThreatIDs, ",")
						if !d.Until.IsZero() {
							extra = "until " + d.Until.Format(time.RFC3339)
						}
						fmt.Fprintf(tw, "%s\t%s\t%s@%s\t%s\t%s\t%s\t%s\n", d.Time.Format(time.RFC3339), d.Ecosystem, d.Name, d.Version, d.Rule, d.Action, orDash(d.User), orDash(extra))
					}
					if tw != nil {
						// Written page by page: a long history is never held whole.
						if err := tw.Flush(); err != nil {
							return err
						}
					}
					if !page.More {
						break
					}
					q.After = page.Decisions[len(page.Decisions)-1].Seq
				}
				if tw != nil {
					return tw.Flush()
				}
				return nil
			})
		},
	}
	c.Flags().String("since", "", "only decisions from this time (RFC 3339) or this long ago (24h)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON, one decision a line")
	return c
}

func firewallHeldCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "held [--json]",
		Short: "List the versions in quarantine now, the soonest released first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withEnv(cmd, func(e *env) error {
				q := firewall.HeldQuery{Now: time.Now(), Limit: 1000}
				next := func() ([]firewall.HeldVersion, bool, error) {
					page, err := e.store.ListHeld(cmd.Context(), q)
					if err == nil && len(page) == q.Limit {
						q.After = page[len(page)-1].Cursor()
					}
					return page, len(page) == q.Limit, err
				}
				return writePages(cmd.OutOrStdout(), asJSON, "ECOSYSTEM\tPACKAGE\tPUBLISHED\tUNTIL", next,
					func(h firewall.HeldVersion) any { return firewall.ShowHeld(h) },
					func(h firewall.HeldVersion) string {
						pub := "unknown (first seen " + h.FirstSeen.Format(time.RFC3339) + ")"
						if !h.Published.IsZero() {
							pub = h.Published.Format(time.RFC3339)
						}
						return fmt.Sprintf("%s\t%s@%s\t%s\t%s", h.Ecosystem, h.Name, h.Version, pub, h.Until.Format(time.RFC3339))
					})
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
