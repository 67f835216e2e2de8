package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/api"
	"github.com/threatd/threatd/core/community"
)

// campaignCmd is `threatd campaign`: campaigns of related reports
// (docs/campaigns.md), as reviewers make them.
func campaignCmd() *cobra.Command {
	c := &cobra.Command{Use: "campaign", Short: "Group related verified reports into named campaigns (docs/campaigns.md)"}
	c.AddCommand(campaignCreateCmd(), campaignChangeCmd(true), campaignChangeCmd(false), campaignListCmd(), campaignSuggestionsCmd())
	return c
}

func campaignCreateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "create --name N [--description D] [--tag T]...",
		Short: "Create a campaign; prints its id alone on standard output",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name, _ := cmd.Flags().GetString("name")
			desc, _ := cmd.Flags().GetString("description")
			tags, _ := cmd.Flags().GetStringArray("tag")
			req := community.CampaignRequest{Name: &name, Description: &desc, Tags: &tags}
			if !cmd.Flags().Changed("name") {
				req.Name = nil
			}
			return withEnv(cmd, func(e *env) error {
				camp, err := community.Campaigns{Store: e.store}.Create(cmd.Context(), community.Operator, req)
				if err != nil {
					return friendly(err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), camp.ID)
				return nil
			})
		},
	}
	c.Flags().String("name", "", "the campaign's name (required)")
	c.Flags().String("description", "", "what the campaign is (Markdown)")
	c.Flags().StringArray("tag", nil, "a tag of the campaign (repeat for more)")
	return c
}

// campaignChangeCmd is `campaign add ID THREAT_ID...` or `campaign remove`.
func campaignChangeCmd(add bool) *cobra.Command {
	use, short := "add ID THREAT_ID...", "Add verified reports to a campaign"
	if !add {
		use, short = "remove ID THREAT_ID...", "Remove reports from a campaign"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := community.CampaignRequest{Add: args[1:]}
			if !add {
				req = community.CampaignRequest{Remove: args[1:]}
			}
			return withEnv(cmd, func(e *env) error {
				camp, err := community.Campaigns{Store: e.store}.Update(cmd.Context(), community.Operator, args[0], req)
				if err != nil {
					return friendly(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "campaign %s (%s) has %s\n", camp.ID, camp.Name, core.Count(len(camp.ThreatIDs), "report", "reports"))
				return nil
			})
		},
	}
}

func campaignListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list [--json]",
		Short: "List every campaign by name: id, name, reports, first and last seen",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, _ := cmd.Flags().GetBool("json")
			return withEnv(cmd, func(e *env) error {
				var all []community.Campaign
				q := community.CampaignQuery{Limit: 200}
				for {
					page, err := e.store.ListCampaigns(cmd.Context(), q)
					if err != nil {
						return err
					}
					all = append(all, page...)
					if len(page) < q.Limit {
						break
					}
					q.AfterName, q.AfterID = page[len(page)-1].Name, page[len(page)-1].ID
				}
				out := cmd.OutOrStdout()
				if asJSON {
					list := make([]api.CampaignJSON, len(all))
					for i, c := range all {
						list[i] = api.CampaignOf(c)
					}
					enc := json.NewEncoder(out)
					enc.SetIndent("", "  ")
					return enc.Encode(list)
				}
				w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tNAME\tREPORTS\tFIRST SEEN\tLAST SEEN\tTAGS")
				stamp := func(t *time.Time) string {
					if t == nil {
						return "-"
					}
					return t.UTC().Format(time.DateOnly)
				}
				for _, c := range all {
					fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", c.ID, oneLine(c.Name, 60), len(c.ThreatIDs), stamp(c.FirstSeen), stamp(c.LastSeen), orDash(strings.Join(c.Tags, ", ")))
				}
				return w.Flush()
			})
		},
	}
	c.Flags().Bool("json", false, "print the campaigns as a JSON array")
	return c
}

func campaignSuggestionsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "suggestions [--limit N]",
		Short: "Propose groups of verified reports that may be campaigns, and why (one pass over the reports)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			limit, _ := cmd.Flags().GetInt("limit")
			if limit < 1 {
				return fmt.Errorf("invalid --limit %d: give a positive number", limit)
			}
			return withEnv(cmd, func(e *env) error {
				res, err := community.Suggest(cmd.Context(), e.store)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				for i, s := range res.Suggestions {
					if i == limit {
						break
					}
					fmt.Fprintf(out, "%s: %s (%s)\n", s.Reason, visible(s.Detail), core.Count(len(s.ThreatIDs), "report", "reports"))
					for _, id := range s.ThreatIDs {
						fmt.Fprintf(out, "  %s\n", id)
					}
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%d suggestion(s) from %d verified reports in %s; %d group(s) too large to suggest, %d already in a campaign\n",
					len(res.Suggestions), res.Reports, res.Took.Round(time.Millisecond), len(res.TooLarge), res.Covered)
				if res.IndicatorsCapped {
					fmt.Fprintf(cmd.ErrOrStderr(), "only the %d largest shared-indicator groups were read; smaller ones are not suggested\n", core.MaxPage)
				}
				return nil
			})
		},
	}
	c.Flags().Int("limit", 100, "print at most N suggestions, largest first")
	return c
}
