package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/api"
	"github.com/threatd/threatd/core/exposure"
)

func exposureCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "exposure [THREAT_ID] [--json]",
		Short: "Who already got a version a report refuses: every exposure, or one report's, newest first (docs/exposure.md)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(cmd, func(e *env) error {
				q := exposure.Query{Limit: exposure.MaxPage}
				if len(args) == 1 {
					if _, err := e.store.GetThreat(cmd.Context(), args[0]); errors.Is(err, core.ErrNotFound) {
						return &exitError{code: 1, err: fmt.Errorf("no report %s", args[0])}
					} else if err != nil {
						return err
					}
					q.ThreatID = args[0]
				}
				out := cmd.OutOrStdout()
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				if asJSON {
					fmt.Fprint(out, "[")
				} else {
					fmt.Fprintln(tw, "FOUND\tREPORT\tKIND\tPACKAGE\tWHO\tFROM\tFIRST\tLAST\tCOUNT")
				}
				n := 0
				// Page after page: the list is never held whole.
				for {
					page, err := e.store.ListExposures(cmd.Context(), q)
					if err != nil {
						return err
					}
					for _, x := range page {
						if asJSON {
							b, err := json.Marshal(api.ShowExposure(x))
							if err != nil {
								return err
							}
							if n > 0 {
								fmt.Fprint(out, ",")
							}
							_, _ = out.Write(b)
						} else {
							who := x.User
							if x.Kind == exposure.KindInventory {
								who = "project " + x.Project + " (" + x.User + ")"
							}
							fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", x.FoundAt.Format(time.RFC3339), x.ThreatID, x.Kind, x.Purl, who, x.ClientIP,
								x.First.Format(time.RFC3339), x.Last.Format(time.RFC3339), x.Count)
						}
						n++
					}
					if err := tw.Flush(); err != nil {
						return err
					}
					if len(page) < q.Limit {
						break
					}
					q.After = page[len(page)-1].ID
				}
				if asJSON {
					fmt.Fprintln(out, "]")
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "one JSON array, as GET /exposure shows each")
	return c
}
