package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/core/api"
)

func analysisCmd() *cobra.Command {
	c := &cobra.Command{Use: "analysis", Short: "The daemon's package analyses: show one, or queue one again (docs/analysis.md)"}
	c.AddCommand(analysisShowCmd(), analysisQueueCmd())
	return c
}

func analysisShowCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show PURL [--json]",
		Short: "Show a version's analysis: its verdict, score and findings (exit 1 when it was never analysed)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withVersion(cmd, args[0], func(e *env, k analysis.Key) error {
				en, err := e.store.Analysis(cmd.Context(), k)
				if errors.Is(err, core.ErrNotFound) || err == nil && en.Result.Verdict == "" {
					state := "never queued"
					if err == nil {
						state = en.State + " for analysis"
					}
					return &exitError{code: 1, err: fmt.Errorf("%s was never analysed (%s)", k.Purl(), state)}
				}
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if asJSON {
					b, err := json.MarshalIndent(api.ShowAnalysis(en), "", "  ")
					if err != nil {
						return err
					}
					_, err = fmt.Fprintf(out, "%s\n", b)
					return err
				}
				fmt.Fprintf(out, "%s: %s (score %.1f), analysed %s by %v", k.Purl(), en.Result.Verdict, en.Result.Score,
					en.AnalyzedAt.Format("2006-01-02 15:04:05Z07:00"), en.Result.Analyzers)
				if en.State != analysis.StateDone {
					fmt.Fprintf(out, "; %s again", en.State)
				}
				fmt.Fprintln(out)
				if en.Digest != "" {
					fmt.Fprintf(out, "archive sha256 %s\n", en.Digest)
				}
				if en.Result.Reason != "" {
					fmt.Fprintf(out, "reason: %s\n", en.Result.Reason)
				}
				if en.ReportID != "" {
					fmt.Fprintf(out, "report %s (%s)\n", en.ReportID, en.ReportStatus)
				}
				if len(en.Result.Findings) == 0 {
					return nil
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "\nSEVERITY\tNEW\tRULE\tWHERE\tEXCERPT")
				for _, f := range en.Result.Findings {
					isNew := "-"
					if f.New {
						isNew = "new"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Severity, isNew, f.Rule, f.Where(), analysis.Excerpt(f.Excerpt))
				}
				return tw.Flush()
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the analysis as GET /analysis answers it")
	return c
}

func analysisQueueCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "queue PURL",
		Short: "Queue a version for analysis (again, when it was analysed); a running daemon analyses it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withVersion(cmd, args[0], func(e *env, k analysis.Key) error {
				if _, err := e.store.QueueAnalyses(cmd.Context(), analysis.QueueRequest{Jobs: []analysis.Job{{Ecosystem: k.Ecosystem, Name: k.Name, Version: k.Version, RequestedBy: "threatd analysis queue"}}, Force: true}); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s queued for analysis\n", k.Purl())
				return err
			})
		},
	}
}

// withVersion reads the version purl names (exit 2 when it names none
// analysis reads) and runs fn with the store.
func withVersion(cmd *cobra.Command, purl string, fn func(e *env, k analysis.Key) error) error {
	k, err := analysis.KeyOfPurl(purl)
	if err != nil {
		return badInput(err)
	}
	return withEnv(cmd, func(e *env) error { return fn(e, k) })
}
