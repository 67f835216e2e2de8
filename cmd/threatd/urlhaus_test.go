package main_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportURLhaus: `threatd import urlhaus` of the CSV export as URLhaus
// publishes it makes verified url reports (a row threatd cannot hold is
// skipped with its reason), which check-malicious finds and the block
// lists carry; a second import changes nothing; a broken file is refused
// whole.
func TestImportURLhaus(t *testing.T) {
	in := newInstance(t, quiet)
	tok := in.user("dev@example.com")
	dir := t.TempDir()
	csv := filepath.Join(dir, "csv.txt")
	text := `################################################################
# abuse.ch URLhaus Database Dump (CSV - recent URLs only)      #
# Last updated: 2026-11-25 10:05:04 (UTC)                      #
#                                                              #
# Terms Of Use: https://urlhaus.abuse.ch/api/                  #
# For questions please contact urlhaus [at] abuse.ch           #
################################################################
#
# id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter
"3312001","2026-11-25 10:04:10","http://203.0.113.9:43315/i","online","2026-11-25 10:04:10","malware_download","32-bit,elf,mips,Mozi","https://urlhaus.abuse.ch/url/3312001/","geenensp"
"3312000","2026-11-25 09:58:02","https://drop.urlhaus-bad.example/payload.exe","offline","","malware_download","exe,AgentTesla","https://urlhaus.abuse.ch/url/3312000/","abuse_ch"
"3311999","2026-11-25 09:50:00","not a url","online","","malware_download","None","https://urlhaus.abuse.ch/url/3311999/","anonymous"
`
	if err := os.WriteFile(csv, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := in.mustCLI("import", "urlhaus", csv)
	if !strings.Contains(out, "imported   2") || !strings.Contains(out, "skipped    1") || !strings.Contains(out, "id 3311999") {
		t.Fatalf("first import:\n%s", out)
	}
	if out := in.mustCLI("import", "urlhaus", csv); !strings.Contains(out, "unchanged  2") || !strings.Contains(out, "imported   0") {
		t.Fatalf("second import:\n%s", out)
	}
	broken := filepath.Join(dir, "broken.txt")
	if err := os.WriteFile(broken, []byte(text+`"1","2026-11-25 10:04:10","http://a.example/"x,"online"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := in.cli("import", "urlhaus", broken); r.code == 0 || !strings.Contains(r.stderr, "line 13") || !strings.Contains(r.stderr, "nothing was imported") {
		t.Fatalf("a broken file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	d := in.serve()
	r := d.do("GET", base+"/check-malicious?report_type=url&resource_identifier="+url.QueryEscape("https://drop.urlhaus-bad.example/payload.exe"), tok, "")
	det, _ := r.body["details"].(map[string]any)
	if r.body["malicious"] != true || det == nil || det["evidence_references"] != "https://urlhaus.abuse.ch/url/3312000/" {
		t.Fatalf("check: %s", r.raw)
	}
	eventually(t, "the imported hosts on the block lists", func() bool {
		dl, il := d.raw("GET", base+"/blocklists/domains", tok), d.raw("GET", base+"/blocklists/ips", tok)
		return strings.Contains(string(dl.body), "drop.urlhaus-bad.example\n") && strings.Contains(string(il.body), "203.0.113.9\n")
	})
}
