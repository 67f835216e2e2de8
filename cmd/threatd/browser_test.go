package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// e2eDir holds the browser journey (core/web/e2e) and its playwright-core.
const e2eDir = "../../core/web/e2e"

// TestWebBrowser runs the web journey in headless Chromium driven by
// Playwright (core/web/e2e/journey.mjs) against a real daemon over HTTPS:
// sign up, generate a token and copy it, submit through the API with it,
// see it pending in My submissions, submit through the form, a pending
// report is 404 to a visitor, a form without its CSRF token is refused, a
// reviewer verifies in the queue, check-malicious says malicious at once,
// the public page renders the Markdown with its hostile parts inert, the
// home page's search, a phone-sized screen, log out; three users' votes
// dispute the report and the reviewer keeps it in the queue, a campaign
// holds it, the campaign page, the leaderboard and the profile, an import
// source's profile beside a person of its name, on a phone too. Each page is checked
// for console errors, CSP violations, unlabelled inputs and the names of
// docs/web.md by role. The test then checks what the browser did
// through the API, independently of the script.
//
// It needs Debian's chromium and `npm ci` in core/web/e2e: `make test`
// installs both and sets THREATD_BROWSER_TESTS=required, so a missing
// browser fails there; elsewhere it skips. THREATD_SCREENSHOTS keeps the
// screenshots (`make screenshots` writes docs/screenshots/).
func TestWebBrowser(t *testing.T) {
	t.Parallel()
	node, chromium, shots := needBrowser(t)

	// Every page loads its style sheet and script: the journey's ~400
	// requests from one address would pass the per-IP limit.
	in := newInstance(t, "cache:\n  freshness: 60s\nlimits:\n  per_ip_per_minute: 0\n")
	// Rita administers as well as reviews (the users page).
	ritaToken := in.user("rita@example.com", "--role", "admin", "--name", "Rita")
	checker := in.user("checker@example.com")
	var voters []string
	for i := range 3 {
		voters = append(voters, in.user(fmt.Sprintf("voter%d@example.com", i)))
	}
	in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", "rita@example.com")
	// A source's user (a URLhaus import) and a person who took its name,
	// for the profile page that shows both.
	export := filepath.Join(t.TempDir(), "urlhaus.csv")
	if err := os.WriteFile(export, []byte("# id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter\n"+
		`"701","2026-11-25 10:04:10","https://drop.browser-test.example/a.exe","online","","malware_download","exe","https://urlhaus.abuse.ch/url/701/","abuse_ch"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in.mustCLI("import", "urlhaus", export)
	in.user("urlhaus@example.com", "--name", "urlhaus")
	d := in.serve()

	stdout := runBrowserScript(t, node, chromium, shots, "journey.mjs", d.base,
		"REVIEWER_EMAIL=rita@example.com", "REVIEWER_PASSWORD=correct horse battery",
		"VOTER_TOKENS="+strings.Join(voters, ","), "REVIEWER_TOKEN="+ritaToken)
	var got struct {
		APIThreatID  string `json:"api_threat_id"`
		Package      string `json:"package"`
		Token        string `json:"token"`
		FormThreatID string `json:"form_threat_id"`
		FormPackage  string `json:"form_package"`
		CampaignID   string `json:"campaign_id"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout), &got); err != nil || got.Token == "" {
		t.Fatalf("the journey's summary %q: %v", stdout, err)
	}

	// What the browser did, seen through the API and the CLI.
	// The journey's own token was revoked when Rita disabled Sam.
	d.do("GET", base+"/account", got.Token, "").expect(t, 401, "")
	v := d.do("GET", checkPath("purl", "pkg:npm/"+got.Package), checker, "").expect(t, 200, "")
	if v.body["malicious"] != true {
		t.Errorf("check-malicious for the report verified in the browser: %v", v.body)
	}
	v = d.do("GET", checkPath("purl", "pkg:pypi/"+got.FormPackage), checker, "").expect(t, 200, "")
	if v.body["malicious"] != false {
		t.Errorf("check-malicious for the pending report submitted through the form: %v", v.body)
	}
	// Sam deleted the account: the form's pending report was withdrawn,
	// the verified one stays.
	if pending := in.mustCLI("review", "list"); strings.Contains(pending, got.FormThreatID) || strings.Contains(pending, got.APIThreatID) {
		t.Errorf("review list after the journey should hold neither report:\n%s", pending)
	}
	if show := in.mustCLI("review", "show", got.FormThreatID); !strings.Contains(show, "rejected") || !strings.Contains(show, "deleted their account") {
		t.Errorf("the deleted account's pending report:\n%s", show)
	}
	var users []map[string]any
	if err := json.Unmarshal([]byte(in.mustCLI("user", "list", "--json")), &users); err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, u := range users {
		if u["state"] == "deleted" && u["name"] == "deleted user" {
			deleted++
		}
	}
	if deleted != 1 {
		t.Errorf("user list after the journey: %d deleted accounts, want 1: %v", deleted, users)
	}
	rita := in.browser(d)
	rita.get("/login")
	rita.post("/login", url.Values{"email": {"rita@example.com"}, "password": {"correct horse battery"}}).expect(t, 200)
	rita.get("/threats/"+got.FormThreatID).expect(t, 200, "Typosquat that opens a reverse shell", "0.1.0", "typosquat", "https://blog.example/b")
	rita.get("/threats/"+got.APIThreatID).expect(t, 200, "verified", "Confirmed: the postinstall script posts ~/.npmrc",
		"dispute by threatd", "keep by Rita", "The postinstall script does post ~/.npmrc: it stands")
	// The dispute the browser kept is closed, its votes counted; the
	// campaign it made names the report.
	det, _ := d.do("GET", checkPath("purl", "pkg:npm/"+got.Package), checker, "").body["details"].(map[string]any)
	camps, _ := det["campaigns"].([]any)
	if det["disputed"] != false || det["sightings"].(map[string]any)["false_positive"] != 3.0 || len(camps) != 1 ||
		camps[0].(map[string]any)["campaign_id"] != got.CampaignID {
		t.Errorf("the kept, campaigned report's record: disputed %v, sightings %v, campaigns %v", det["disputed"], det["sightings"], camps)
	}

	// A screenshot of each main page, as PNG.
	for _, name := range []string{"home", "signup-error", "tokens-new", "my-submissions", "submit", "threat-pending", "review-queue", "threat", "search", "search-indicator",
		"browse", "revoke-confirm", "phone-home", "phone-threat", "phone-browse", "phone-search", "phone-search-indicator", "phone-review-queue", "phone-my-submissions",
		"account", "phone-account", "phone-users", "disable-confirm", "users", "account-deleted",
		"review-disputed", "threat-community", "campaign", "review-campaigns", "leaderboard", "profile", "profile-source", "phone-campaign", "phone-leaderboard", "phone-profile", "phone-profile-source", "phone-threat-community"} {
		b, err := os.ReadFile(filepath.Join(shots, name+".png"))
		if err != nil || len(b) < 5000 || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("screenshot %s: %d bytes, %v", name, len(b), err)
		}
	}
}

// needBrowser finds node, Debian's chromium and playwright-core, or skips
// (fails under THREATD_BROWSER_TESTS=required); and the screenshots'
// directory (THREATD_SCREENSHOTS, else a temporary one).
func needBrowser(t *testing.T) (node, chromium, shots string) {
	t.Helper()
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	var missing []string
	if _, err := os.Stat(chromium); err != nil {
		missing = append(missing, chromium+" (apt-get install chromium)")
	}
	if _, err := os.Stat(filepath.Join(e2eDir, "node_modules", "playwright-core")); err != nil {
		missing = append(missing, "playwright-core (npm ci --prefix core/web/e2e)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing = append(missing, "node")
	}
	if len(missing) > 0 {
		if os.Getenv("THREATD_BROWSER_TESTS") == "required" {
			t.Fatalf("the browser tests need %s", strings.Join(missing, ", "))
		}
		t.Skipf("no browser test: missing %s (make test installs them)", strings.Join(missing, ", "))
	}
	shots = os.Getenv("THREATD_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if shots, err = filepath.Abs(shots); err != nil {
		t.Fatal(err)
	}
	return node, chromium, shots
}

// runBrowserScript runs one of core/web/e2e's scripts against the daemon
// at baseURL with env added, and returns what it printed; it fails the
// test when the script does.
func runBrowserScript(t *testing.T, node, chromium, shots, script, baseURL string, env ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = e2eDir
	cmd.Env = append(append(os.Environ(), "THREATD_URL="+baseURL, "THREATD_API_BASE="+base, "SCREENSHOT_DIR="+shots, "CHROMIUM="+chromium), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the browser script %s failed (%v):\n%s\n%s", script, err, stderr.String(), stdout.String())
	}
	return stdout.Bytes()
}
