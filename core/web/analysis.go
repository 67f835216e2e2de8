package web

import (
	"context"
	"slices"

	"github.com/threatd/threatd/core/analysis"
)

// analysesOf are the analyses that filed these reports (package
// analysis's automatic reports), by report id.
func (s *Site) analysesOf(ctx context.Context, reportIDs []string) (map[string]analysis.Entry, error) {
	out := map[string]analysis.Entry{}
	for chunk := range slices.Chunk(reportIDs, analysis.MaxClaim) {
		es, err := s.store.AnalysesOfReports(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			out[e.ReportID] = e
		}
	}
	return out, nil
}
