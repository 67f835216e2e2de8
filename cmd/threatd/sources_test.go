package main_test

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestImportURLhaus: `threatd import urlhaus` of the CSV export as URLhaus
// publishes it makes verified url reports (a row threatd cannot hold is
// skipped with its reason), which check-malicious finds and the block
// lists carry; a second import changes nothing; a broken file is refused
// whole.
func TestImportURLhaus(t *testing.T) {
	t.Parallel()
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

// TestImportThreatFox: `threatd import threatfox` of the JSON export makes
// verified domain, url and ip reports (a hash is skipped with its reason),
// which check-malicious finds and the block lists carry; a second import
// changes nothing; a file that is not an export is refused whole.
func TestImportThreatFox(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("dev@example.com")
	dir := t.TempDir()
	file := filepath.Join(dir, "full.json")
	text := `{
    "1401001": [
        {
            "ioc_value": "c2.tf-bad.example",
            "ioc_type": "domain",
            "threat_type": "botnet_cc",
            "malware": "win.cobalt_strike",
            "malware_alias": "Agentemis,BEACON,CobaltStrike,cobeacon",
            "malware_printable": "Cobalt Strike",
            "first_seen_utc": "2026-11-24 08:00:01",
            "last_seen_utc": null,
            "confidence_level": 100,
            "reference": null,
            "tags": "CobaltStrike,c2",
            "anonymous": "0",
            "reporter": "abuse_ch"
        }
    ],
    "1401002": [
        {
            "ioc_value": "198.51.100.44:8443",
            "ioc_type": "ip:port",
            "threat_type": "botnet_cc",
            "malware": "elf.mirai",
            "malware_alias": null,
            "malware_printable": "Mirai",
            "first_seen_utc": "2026-11-24 09:00:00",
            "last_seen_utc": "2026-11-25 09:00:00",
            "confidence_level": 75,
            "reference": null,
            "tags": null,
            "anonymous": "0",
            "reporter": "someone"
        }
    ],
    "1401004": [
        {
            "ioc_value": "d41d8cd98f00b204e9800998ecf8427e",
            "ioc_type": "md5_hash",
            "threat_type": "payload",
            "malware": "win.agent_tesla",
            "malware_alias": null,
            "malware_printable": "Agent Tesla",
            "first_seen_utc": "2026-11-24 11:00:00",
            "last_seen_utc": null,
            "confidence_level": 50,
            "reference": null,
            "tags": null,
            "anonymous": "0",
            "reporter": "x"
        }
    ]
}
`
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := in.mustCLI("import", "threatfox", file)
	if !strings.Contains(out, "imported   2") || !strings.Contains(out, "skipped    1") || !strings.Contains(out, "md5_hash") {
		t.Fatalf("first import:\n%s", out)
	}
	if out := in.mustCLI("import", "threatfox", file); !strings.Contains(out, "unchanged  2") || !strings.Contains(out, "imported   0") {
		t.Fatalf("second import:\n%s", out)
	}
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte("["+text+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := in.cli("import", "threatfox", broken); r.code == 0 || !strings.Contains(r.stderr, "not a ThreatFox JSON export") {
		t.Fatalf("a file that is not an export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	d := in.serve()
	r := d.do("GET", base+"/check-malicious?report_type=domain&resource_identifier=c2.tf-bad.example", tok, "")
	if det, _ := r.body["details"].(map[string]any); r.body["malicious"] != true || det == nil || det["threat_description"] != "ThreatFox: botnet cc (Cobalt Strike)" {
		t.Fatalf("check: %s", r.raw)
	}
	eventually(t, "the imported hosts on the block lists", func() bool {
		dl, il := d.raw("GET", base+"/blocklists/domains", tok), d.raw("GET", base+"/blocklists/ips", tok)
		return strings.Contains(string(dl.body), "c2.tf-bad.example\n") && strings.Contains(string(il.body), "198.51.100.44\n")
	})
}

// TestImportDatadog: `threatd import datadog samples/` of the dataset's
// manifests makes verified package reports (every version for null, the
// listed ones otherwise) that check-malicious finds; a second import
// changes nothing.
func TestImportDatadog(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("dev@example.com")
	root := filepath.Join(t.TempDir(), "samples")
	for eco, text := range map[string]string{"npm": `{"dd-evil": ["1.0.0"], "dd-all": null}`, "pypi": `{"dd-py": null}`} {
		if err := os.MkdirAll(filepath.Join(root, eco), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, eco, "manifest.json"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out := in.mustCLI("import", "datadog", root); !strings.Contains(out, "imported   3") {
		t.Fatalf("first import:\n%s", out)
	}
	if out := in.mustCLI("import", "datadog", root); !strings.Contains(out, "unchanged  3") {
		t.Fatalf("second import:\n%s", out)
	}
	d := in.serve()
	for q, want := range map[string]bool{
		"report_type=package&resource_identifier=dd-evil&ecosystem=npm&version=1.0.0": true,
		"report_type=package&resource_identifier=dd-evil&ecosystem=npm&version=2.0.0": false,
		"report_type=package&resource_identifier=dd-all&ecosystem=npm&version=9.9.9":  true,
		"report_type=package&resource_identifier=dd-py&ecosystem=pypi":                true,
	} {
		if r := d.do("GET", base+"/check-malicious?"+q, tok, ""); r.body["malicious"] != want {
			t.Errorf("%s: %s", q, r.raw)
		}
	}
}

// TestImportTrustAndFull: an import is attributed to the source user
// named after the source; with --trust pending its reports wait in the
// review queue, unpublished, and a reviewer's verification counts on the
// source user's public profile; with --full the source's reports the file
// no longer lists are withdrawn (and leave check-malicious), unless a row
// without a readable id makes what the file lists unknown.
func TestImportTrustAndFull(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("dev@example.com")
	// A person whose public name is the source's (names are not unique).
	in.user("urlhaus@example.com", "--name", "urlhaus")
	dir := t.TempDir()
	head := "# id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter\n"
	row := func(id, u string) string {
		return `"` + id + `","2026-11-25 10:04:10","` + u + `","online","","malware_download","exe","https://urlhaus.abuse.ch/url/` + id + `/","abuse_ch"` + "\n"
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	all := write("all.csv", head+row("501", "https://one.trust-test.example/a.exe")+row("502", "https://two.trust-test.example/b.exe")+row("503", "not a url"))
	if r := in.cli("import", "urlhaus", "--trust", "maybe", all); r.code == 0 || !strings.Contains(r.stderr, `--trust: must be verified or pending (got "maybe")`) {
		t.Fatalf("--trust maybe: exit %d %s", r.code, r.stderr)
	}
	if out := in.mustCLI("import", "urlhaus", "--trust", "pending", all); !strings.Contains(out, "imported   2") || !strings.Contains(out, "skipped    1") {
		t.Fatalf("pending import:\n%s", out)
	}
	list := in.mustCLI("review", "list")
	ids := regexp.MustCompile(`(?m)^([0-9a-f-]{36})  1 `).FindAllStringSubmatch(list, -1)
	if len(ids) != 2 || !strings.Contains(list, "one.trust-test.example") {
		t.Fatalf("review list after a pending import:\n%s", list)
	}
	d := in.serve()
	check := func(u string) bool {
		return d.do("GET", base+"/check-malicious?report_type=url&resource_identifier="+url.QueryEscape(u), tok, "").body["malicious"] == true
	}
	if check("https://one.trust-test.example/a.exe") {
		t.Fatal("a pending imported report is published")
	}
	for _, m := range ids {
		in.mustCLI("review", "verify", m[1])
	}
	eventually(t, "the verified reports published", func() bool {
		return check("https://one.trust-test.example/a.exe") && check("https://two.trust-test.example/b.exe")
	})
	// The source user: a public profile with the verifications' points.
	prof := d.raw("GET", "/users/urlhaus", "")
	text := strings.Join(strings.Fields(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(string(prof.body), " ")), " ")
	if prof.code != 200 || !strings.Contains(text, "Points 20 Verified reports 2") || strings.Contains(text, "sources.threatd.invalid") {
		t.Fatalf("the source user's profile: %d\n%.3000s", prof.code, text)
	}
	// The person of the same name is shown apart, after the source, and
	// only the source is called one.
	source := "urlhaus Import source: the reports threatd imports from urlhaus's published data are attributed to this account."
	if !strings.Contains(text, "2 contributors use this name") || strings.Count(text, "Import source") != 1 || strings.Count(text, "Contributor since") != 1 ||
		!strings.Contains(text, source) || strings.Index(text, source) > strings.Index(text, "Contributor since") {
		t.Fatalf("the source and the person named after it:\n%.3000s", text)
	}
	if r := in.cli("user", "add", "--email", "urlhaus@sources.threatd.invalid"); r.code == 0 || !strings.Contains(r.stderr, "reserved") {
		t.Fatalf("a person taking a source user's e-mail: exit %d %s", r.code, r.stderr)
	}
	if r := in.cli("token", "issue", "--email", "urlhaus@sources.threatd.invalid"); r.code == 0 || !strings.Contains(r.stderr, "no password and no token") {
		t.Fatalf("a token for a source's user: exit %d %s", r.code, r.stderr)
	}
	if r := in.cliStdin("secret-password-1\n", "user", "set-password", "--email", "urlhaus@sources.threatd.invalid"); r.code == 0 || !strings.Contains(r.stderr, "no password and no token") {
		t.Fatalf("a password for a source's user: exit %d %s", r.code, r.stderr)
	}

	// A row whose id cannot be read: --full withdraws nothing, and says why.
	bad := write("bad.csv", head+row("501", "https://one.trust-test.example/a.exe")+row("x9", "https://three.trust-test.example/c"))
	if out := in.mustCLI("import", "urlhaus", "--full", bad); !strings.Contains(out, "withdrawn  0") || !strings.Contains(out, "--full withdrew nothing: 1 input was skipped without an upstream id") {
		t.Fatalf("--full with an unreadable id:\n%s", out)
	}
	// 502 no longer listed: withdrawn; 503 (listed, skipped) and 501 stay.
	less := write("less.csv", head+row("501", "https://one.trust-test.example/a.exe")+row("503", "not a url"))
	if out := in.mustCLI("import", "urlhaus", "--full", less); !strings.Contains(out, "withdrawn  1") || !strings.Contains(out, "unchanged  1") {
		t.Fatalf("--full:\n%s", out)
	}
	eventually(t, "the withdrawn report unpublished", func() bool { return !check("https://two.trust-test.example/b.exe") })
	if !check("https://one.trust-test.example/a.exe") {
		t.Fatal("--full withdrew a report the file lists")
	}
	if out := in.mustCLI("import", "urlhaus", "--full", less); !strings.Contains(out, "withdrawn  0") {
		t.Fatalf("--full again:\n%s", out)
	}
	// 502 listed again (say, back online): restored and published.
	if out := in.mustCLI("import", "urlhaus", "--full", all); !strings.Contains(out, "restored   1") || !strings.Contains(out, "withdrawn  0") {
		t.Fatalf("--full listing 502 again:\n%s", out)
	}
	eventually(t, "the restored report published", func() bool { return check("https://two.trust-test.example/b.exe") })
	if out := in.mustCLI("import", "urlhaus", "--full", all); !strings.Contains(out, "restored   0") || !strings.Contains(out, "unchanged  2") {
		t.Fatalf("--full after the restoration:\n%s", out)
	}
	// A person's verified report that URLhaus lists too is attached to;
	// when URLhaus stops listing it, --full leaves it: it was never the
	// source's to withdraw.
	mine := "https://person.trust-test.example/p.exe"
	pid := d.submit(tok, `{"report_type":"url","resource_identifier":"`+mine+`","threat_description":"Serves a stealer"}`)
	in.mustCLI("review", "verify", pid)
	with := write("with.csv", head+row("501", "https://one.trust-test.example/a.exe")+row("502", "https://two.trust-test.example/b.exe")+row("503", "not a url")+row("504", mine))
	if out := in.mustCLI("import", "urlhaus", "--full", with); !strings.Contains(out, "attached   1") {
		t.Fatalf("--full listing a person's report:\n%s", out)
	}
	if out := in.mustCLI("import", "urlhaus", "--full", all); !strings.Contains(out, "withdrawn  0") {
		t.Fatalf("--full no longer listing the person's report:\n%s", out)
	}
	if show := in.mustCLI("review", "show", pid); !strings.Contains(show, "verified") {
		t.Fatalf("the person's report after --full:\n%s", show)
	}
	eventually(t, "the person's report still published", func() bool { return check(mine) })
}

// TestSourcesEntryTrustAndFull: a sources: entry with full: true and
// trust: pending does what the flags do, run by the daemon: its new
// reports wait for review, its reports the file no longer lists are
// withdrawn.
func TestSourcesEntryTrustAndFull(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	head := "# id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter\n"
	row := func(id, u string) string {
		return `"` + id + `","2026-11-25 10:04:10","` + u + `","online","","malware_download","exe","https://urlhaus.abuse.ch/url/` + id + `/","abuse_ch"` + "\n"
	}
	first, later := filepath.Join(dir, "first.csv"), filepath.Join(dir, "later.csv")
	if err := os.WriteFile(first, []byte(head+row("601", "https://keep.entry-test.example/a")+row("602", "https://gone.entry-test.example/b")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(later, []byte(head+row("601", "https://keep.entry-test.example/a")+row("603", "https://new.entry-test.example/c")), 0o644); err != nil {
		t.Fatal(err)
	}
	in := newInstance(t, quiet+"sources:\n  - {name: uh-hourly, plugin: urlhaus, paths: ["+strconv.Quote(later)+"], interval: 1h, full: true, trust: pending}\n")
	tok := in.user("dev@example.com")
	in.mustCLI("import", "urlhaus", first)
	d := in.serve()
	check := func(u string) bool {
		return d.do("GET", base+"/check-malicious?report_type=url&resource_identifier="+url.QueryEscape(u), tok, "").body["malicious"] == true
	}
	eventually(t, "the entry's run: 602 withdrawn", func() bool { return !check("https://gone.entry-test.example/b") })
	if !check("https://keep.entry-test.example/a") || check("https://new.entry-test.example/c") {
		t.Fatal("the entry's run withdrew a listed report or published a pending one")
	}
	if list := in.mustCLI("review", "list"); !strings.Contains(list, "new.entry-test.example") {
		t.Fatalf("the entry's new report is not pending review:\n%s", list)
	}
}
