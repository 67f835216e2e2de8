package main_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
	"github.com/threatd/threatd/cmd/internal/testbin"
)

// TestFirewallPolicyDocSnippets: docs/firewall.md's private names and
// quarantine blocks, added to a configuration as they are written (only
// the private upstreams' URLs are the test's), do what the page says; its
// waiver commands print what it shows and lift the hold.
func TestFirewallPolicyDocSnippets(t *testing.T) {
	t.Parallel()
	const doc = "docs/firewall.md"
	u, private := fakeregistry.New(t), fakeregistry.New(t)
	now := time.Now()
	ago := func(h float64) time.Time { return now.Add(-time.Duration(h * float64(time.Hour))) }
	old := fakeregistry.OldTimes(1)[0]
	// Public: a decoy of the private name, and versions of several ages.
	u.NPMPackage(t, "@acme/internal", "9.9.9", "9.9.9")
	u.NPMPackageAt(t, "left-pad", "1.3.1", nil, []string{"1.3.0", "1.3.1"}, []time.Time{old, ago(1)}, nil)
	u.NPMPackageAt(t, "react-dom", "2.0.0", nil, []string{"1.0.0", "2.0.0"}, []time.Time{old, ago(60)}, nil)
	u.NPMPackageAt(t, "typescript", "6.0.0", nil, []string{"5.0.0", "6.0.0"}, []time.Time{old, ago(1)}, nil)
	u.GoModuleAt(t, "example.com/lib", []string{"v1.0.0", "v1.1.0"}, []time.Time{old, ago(30)})
	u.NPMPackageAt(t, "plain", "1.1.0", nil, []string{"1.0.0", "1.1.0"}, []time.Time{old, ago(30)}, nil)
	private.NPMPackage(t, "@acme/internal", "1.0.0", "1.0.0")
	private.PyPIProject(t, "acme-tools", "1.0.0")
	private.GoModule(t, "git.acme.example/lib", "v1.0.0")

	privateYAML := strings.NewReplacer(
		"https://npm.internal.example", private.Srv.URL,
		"https://devpi.internal.example/root/acme/+simple", private.Srv.URL+"/simple",
		"https://athens.internal.example", private.Srv.URL,
	).Replace(docSnippet(t, doc, "snippet", "fw-private"))
	upstreams := fmt.Sprintf("firewall:\n  npm: {upstream: %q}\n  pypi: {upstream: %q}\n  go: {upstream: %q}\n", u.Srv.URL, u.Srv.URL+"/simple", u.Srv.URL)
	in := newInstance(t, mergeYAML(t, quiet+"  new_user_max_unverified: 0\n", upstreams, privateYAML, docSnippet(t, doc, "snippet", "fw-quarantine")))
	tok := in.user("dev@example.com")
	d := in.serve()
	fw := base + "/firewall"
	fwReport(t, in, d, tok, "npm", "@acme/internal", "")
	fwReport(t, in, d, tok, "pypi", "acme-tools", "")
	eventually(t, "the reports in the index", func() bool {
		code, _, body := d.fwGet(fw+"/npm/@acme%2finternal", tok)
		return code == 200 && strings.Contains(string(body), `"1.0.0"`)
	})

	t.Run("private names", func(t *testing.T) {
		for p, want := range map[string]string{
			"/npm/@acme%2finternal":            `"1.0.0"`,
			"/pypi/simple/acme-tools/":         "acme_tools-1.0.0",
			"/go/git.acme.example/lib/@v/list": "v1.0.0",
		} {
			code, _, body := d.fwGet(fw+p, tok)
			if code != 200 || !strings.Contains(string(body), want) || strings.Contains(string(body), "9.9.9") {
				t.Errorf("%s: %d %.300s", p, code, body)
			}
		}
	})

	t.Run("quarantine", func(t *testing.T) {
		for _, c := range []struct {
			path string
			code int
			want string
		}{
			{"/npm/left-pad/-/left-pad-1.3.1.tgz", 403, "Held by threatd: npm left-pad@1.3.1 was published 1h ago; quarantine is 2d"}, // default: 48h
			{"/npm/plain/-/plain-1.1.0.tgz", 403, "quarantine is 2d"},                                                                 // 30h < 48h
			{"/go/example.com/lib/@v/v1.1.0.info", 200, ""},                                                                           // go: 24h, then its analysis
			{"/npm/react-dom/-/react-dom-2.0.0.tgz", 403, "quarantine is 3d"},                                                         // react*: 72h
			{"/npm/typescript/-/typescript-6.0.0.tgz", 200, ""},                                                                       // excluded
		} {
			code, _, body := d.fwGet(fw+c.path, tok)
			if c.code == 200 && code == 403 && strings.Contains(string(body), "is being analysed") {
				// Past its quarantine when first seen: held until the
				// analysis it was queued for ends (until_analysed).
				eventually(t, c.path+" analysed", func() bool { code, _, body = d.fwGet(fw+c.path, tok); return code != 403 })
			}
			if code != c.code || !strings.Contains(string(body), c.want) {
				t.Errorf("%s: %d %.300s, want %d %q", c.path, code, body, c.code, c.want)
			}
		}
	})

	t.Run("waivers", func(t *testing.T) {
		// The CLI works on the database as its operator: threatd reads the
		// instance's configuration file.
		wrap := fmt.Sprintf("threatd() { command %q \"$@\" --config %q; }\n", testbin.Path("threatd"), in.config)
		id := ""
		uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
		for _, e := range transcript(docSnippet(t, doc, "output", "fw-waivers")) {
			cmd := regexp.MustCompile(`[0-9a-f]{8}-…`).ReplaceAllString(e.command, id)
			out, ok := client(t, t.TempDir(), in.environ(), "bash", "-eo", "pipefail", "-c", wrap+cmd)
			if !ok {
				t.Fatalf("`%s`:\n%s", cmd, out)
			}
			matchTranscript(t, cmd, e.want, out)
			if strings.Contains(cmd, "firewall waive ") {
				lines := strings.Split(strings.TrimSpace(out), "\n")
				id = lines[len(lines)-1]
				if !uuid.MatchString(id) {
					t.Fatalf("waive printed %q, not the id alone on its last line", out)
				}
				eventually(t, "the waiver applied", func() bool {
					code, _, _ := d.fwGet(fw+"/npm/left-pad/-/left-pad-1.3.1.tgz", tok)
					return code == 200
				})
			}
		}
		if id == "" {
			t.Fatal("the waiver block waives nothing")
		}
		eventually(t, "the unwaive applied", func() bool {
			code, _, _ := d.fwGet(fw+"/npm/left-pad/-/left-pad-1.3.1.tgz", tok)
			return code == 403
		})
	})
}
