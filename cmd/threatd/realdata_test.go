package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/coretest"
	"github.com/threatd/threatd/core/ioctest"
)

// The 29,604 real OSV reports of the shared sample, imported through the
// real source and storage plugins and read back over HTTPS from
// /threat-data, publish no false indicator and miss none the upstream
// records list (the audit of core/ioctest, as in osv's test on the
// records as read). Every report's id comes from a streamed export of
// everything (select: all).
func TestRealReportsThroughTheDaemon(t *testing.T) {
	zips, _ := filepath.Glob(filepath.Join(coretest.Reference(t, "osv-malicious-full"), "*", "all.zip"))
	if len(zips) < 8 {
		t.Fatalf("%d archives of real reports, want 8", len(zips))
	}
	in := newInstance(t, quiet+"exporter_routes:\n  - {path: /export/csv/all, exporter: csv, tier: paid, select: all}\n")
	tok := in.user("audit@example.com", "--tier", "paid")
	in.mustCLI(append([]string{"import", "osv"}, zips...)...)
	d := in.serve()
	res := d.raw("GET", base+"/export/csv/all", tok)
	if res.code != 200 {
		t.Fatalf("export: %d %.300s", res.code, res.body)
	}
	seen := map[string]bool{}
	var ids []string
	for i, line := range strings.Split(strings.TrimSpace(string(res.body)), "\n") {
		if id, _, _ := strings.Cut(line, ","); i > 0 && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) < 29_000 {
		t.Fatalf("%d reports exported, want the 29,604 imported less the withdrawn and merged", len(ids))
	}
	type data struct {
		Threat struct {
			ID                 string `json:"id"`
			ResourceIdentifier string `json:"resource_identifier"`
			VersionInfo        string `json:"version_info"`
			PayloadDescription string `json:"payload_description"`
			ThreatDescription  string `json:"threat_description"`
			EvidenceReferences string `json:"evidence_references"`
			OSVAdvisoryURL     string `json:"osv_advisory_url"`
		} `json:"threat"`
		IOCs []core.IOC `json:"iocs"`
	}
	var (
		mu     sync.Mutex
		counts ioctest.Counts
		failed []string
		wg     sync.WaitGroup
	)
	next := make(chan string)
	for range 4 {
		wg.Go(func() {
			for id := range next {
				req, _ := http.NewRequest("GET", d.base+base+"/threat-data?threat_id="+id, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				r, err := d.client.Do(req)
				var body data
				if err == nil {
					err = json.NewDecoder(r.Body).Decode(&body)
					r.Body.Close()
					if err == nil && r.StatusCode != 200 {
						err = fmt.Errorf("status %d", r.StatusCode)
					}
				}
				mu.Lock()
				if err != nil {
					failed = append(failed, id+": "+err.Error())
				} else {
					th := body.Threat
					counts.Add(ioctest.Report{ID: th.ID, UpstreamID: th.OSVAdvisoryURL, ResourceIdentifier: th.ResourceIdentifier, VersionInfo: th.VersionInfo,
						PayloadDescription: th.PayloadDescription, ThreatDescription: th.ThreatDescription,
						EvidenceReferences: th.EvidenceReferences, OSVAdvisoryURL: th.OSVAdvisoryURL}, body.IOCs)
				}
				mu.Unlock()
			}
		})
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of %d /threat-data calls failed: %q", len(failed), len(ids), failed[:min(5, len(failed))])
	}
	t.Logf("through the daemon: %s", &counts)
	if counts.False() != 0 || counts.Listed < 13_000 || counts.Missed != 0 {
		t.Fatalf("%d false and %d missed indicators: %s", counts.False(), counts.Missed, &counts)
	}
}
