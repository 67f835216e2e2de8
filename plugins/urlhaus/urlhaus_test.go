package urlhaus

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// header is the export's header as URLhaus publishes it.
const header = `################################################################
# abuse.ch URLhaus Database Dump (CSV - recent URLs only)      #
# Last updated: 2026-11-25 10:05:04 (UTC)                      #
#                                                              #
# Terms Of Use: https://urlhaus.abuse.ch/api/                  #
# For questions please contact urlhaus [at] abuse.ch           #
################################################################
#
# id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter
`

const rows = `"3312001","2026-11-25 10:04:10","http://203.0.113.9:43315/i","online","2026-11-25 10:04:10","malware_download","32-bit,elf,mips,Mozi","https://urlhaus.abuse.ch/url/3312001/","geenensp"
"3312000","2026-11-25 09:58:02","https://drop.bad-cdn.example/payload.exe","offline","","malware_download","exe,AgentTesla","https://urlhaus.abuse.ch/url/3312000/","abuse_ch"
"3311999","2026-11-25 09:50:00","not a url","online","","malware_download","None","https://urlhaus.abuse.ch/url/3311999/","anonymous"
"3311998","2026-11-25 09:40:00","http://quoted.example/a,b""c","online","2026-11-25 09:45:00","malware_download","","https://urlhaus.abuse.ch/url/3311998/","x"
`

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "csv.txt")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func read(t *testing.T, path string, known core.Known) ([]core.ImportRecord, []string, int, error) {
	t.Helper()
	var (
		recs      []core.ImportRecord
		skipped   []string
		unchanged int
	)
	now := func() time.Time { return time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC) }
	err := Source{Now: now}.Read(context.Background(), []string{path}, map[string]string{"max_affected": "1000"}, known, func(it core.SourceItem) error {
		switch {
		case it.Record != nil:
			recs = append(recs, *it.Record)
		case it.Skipped != "":
			skipped = append(skipped, it.Skipped+": "+it.Reason)
		}
		unchanged += it.Unchanged
		return nil
	})
	return recs, skipped, unchanged, err
}

// The export as URLhaus publishes it: every row a url report of source
// urlhaus, its id kept, its page the evidence, its tags; a row whose URL
// threatd cannot hold is skipped with its line, id and reason.
func TestReadExport(t *testing.T) {
	recs, skipped, _, err := read(t, write(t, header+rows), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || len(skipped) != 1 || !strings.Contains(skipped[0], "line 12 (id 3311999)") || !strings.Contains(skipped[0], "resource_identifier") {
		t.Fatalf("%d records, skipped %q", len(recs), skipped)
	}
	th := recs[0].Threat
	if th.ReportType != core.TypeURL || th.ResourceIdentifier != "http://203.0.113.9:43315/i" || th.Source != SourceName || th.UpstreamID != "3312001" ||
		th.Details.EvidenceReferences != "https://urlhaus.abuse.ch/url/3312001/" ||
		strings.Join(th.Details.Tags, ",") != "urlhaus,32-bit,elf,mips,mozi" || th.Details.ThreatDescription != "URLhaus: malware download" ||
		!th.VerifiedAt.Equal(time.Date(2026, 11, 25, 10, 4, 10, 0, time.UTC)) {
		t.Errorf("first row: %+v %+v", th, th.Details)
	}
	if got := recs[2].Threat; got.ResourceIdentifier != `http://quoted.example/a,b"c` || !got.UpstreamModified.Equal(time.Date(2026, 11, 25, 9, 45, 0, 0, time.UTC)) {
		t.Errorf("a quoted URL: %q modified %v", got.ResourceIdentifier, got.UpstreamModified)
	}
}

// A re-import asks Known and yields the rows it knows as unchanged.
func TestReadKnown(t *testing.T) {
	known := func(_ context.Context, vs []core.UpstreamVersion) ([]bool, error) {
		out := make([]bool, len(vs))
		for i, v := range vs {
			out[i] = v.IDs[0] == "3312001" && v.Source == SourceName
		}
		return out, nil
	}
	recs, _, unchanged, err := read(t, write(t, header+rows), known)
	if err != nil || len(recs) != 2 || unchanged != 1 {
		t.Fatalf("%d records, %d unchanged, %v", len(recs), unchanged, err)
	}
}

// Hostile files: refused whole with a clear error, nothing yielded.
func TestHostileFiles(t *testing.T) {
	long := `"1","2026-11-25 10:04:10","http://x.example/` + strings.Repeat("a", MaxLine) + `","online","","malware_download","","https://urlhaus.abuse.ch/url/1/","x"` + "\n"
	for name, c := range map[string]struct{ text, want string }{
		"no header":      {rows, "no comment line names its columns"},
		"wrong columns":  {strings.Replace(header, "url_status,", "", 1) + rows, "its columns are"},
		"broken quoting": {header + rows + `"5","2026-11-25 10:04:10","http://a.example/"x,"online"` + "\n" + rows, "line 14"},
		"too few fields": {header + rows + `"6","2026-11-25 10:04:10","http://a.example/"` + "\n", "wrong number of fields"},
		"a huge field":   {header + rows + long, "longer than 65536 bytes"},
		"binary":         {header + "\x00\x01\x02,\xff\n", "wrong number of fields"},
		"an empty file":  {"", "no comment line names its columns"},
		"a duplicate id": {header + rows + strings.Replace(strings.SplitAfter(rows, "\n")[1], "payload.exe", "other.exe", 1), `the id "3312000" appears twice (line 11 and line 14)`},
	} {
		recs, skipped, _, err := read(t, write(t, c.text), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || len(recs)+len(skipped) != 0 {
			t.Errorf("%s: %d records, %d skipped, error %v; want an error with %q and nothing yielded", name, len(recs), len(skipped), err, c.want)
		}
	}
}
