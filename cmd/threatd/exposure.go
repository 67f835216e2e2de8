package main

import (
	"errors"
	"fmt"
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
				next := func() ([]exposure.Exposure, bool, error) {
					page, err := e.store.ListExposures(cmd.Context(), q)
					if err == nil && len(page) == q.Limit {
						q.After = page[len(page)-1].ID
					}
					return page, len(page) == q.Limit, err
				}
				return writePages(cmd.OutOrStdout(), asJSON, "FOUND\tREPORT\tKIND\tPACKAGE\tWHO\tFROM\tFIRST\tLAST\tCOUNT", next,
					func(x exposure.Exposure) any { return api.ShowExposure(x) },
					func(x exposure.Exposure) string {
						who := x.User
						if x.Kind == exposure.KindInventory {
							who = "project " + x.Project + " (" + x.User + ")"
						}
						return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d", x.FoundAt.Format(time.RFC3339), x.ThreatID, x.Kind, x.Purl, who, x.ClientIP,
							x.First.Format(time.RFC3339), x.Last.Format(time.RFC3339), x.Count)
					})
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "one JSON array, as GET /exposure shows each")
	return c
}
