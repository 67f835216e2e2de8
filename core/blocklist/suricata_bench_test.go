package blocklist

import (
	"context"
	"fmt"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// BenchmarkSuricataAfterOneChange: the rules of 100,000 domains rendered
// again after one report changed (what a poll after a verification pays).
func BenchmarkSuricataAfterOneChange(b *testing.B) {
	st := &store{}
	for i := range 100_000 {
		st.threats = append(st.threats, report(fmt.Sprintf("0192f0aa-%04x-7000-8000-%012d", i%65536, i), 1, core.StatusVerified,
			ind(ioc.Domain, fmt.Sprintf("c2-%07d.bench-exfil.example", i), ioc.ConfidenceHigh)))
	}
	s := NewService(st, "")
	ctx := context.Background()
	if err := s.Fill(ctx); err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.Suricata(ctx); err != nil {
		b.Fatal(err)
	}
	v := 1
	for b.Loop() {
		v++
		s.Apply([]core.Threat{report(st.threats[0].ID, v, core.StatusVerified, st.threats[0].IOCs...)})
		if _, _, err := s.Suricata(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
