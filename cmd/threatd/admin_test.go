package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAdminCLI: user list (text and --json), set-tier and set-role applied
// by a running daemon, token list without the secret, version stamped by
// make build; errors name real flags and arguments.
func TestAdminCLI(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("zed@example.com")
	in.user("amy@example.com", "--name", "Amy A", "--tier", "paid", "--role", "reviewer")
	in.mustCLI("user", "set-limit", "--email", "zed@example.com", "--submissions-per-hour", "7")
	in.mustCLIStdin("a-long-password-1", "user", "set-password", "--email", "amy@example.com")
	d := in.serve()
	d.do("GET", base+"/account", tok, "").expect(t, 200, "")
	d.do("GET", base+"/threat-feed", tok, "").expect(t, 403, "This endpoint requires a paid subscription")

	var users []map[string]any
	if err := json.Unmarshal([]byte(in.mustCLI("user", "list", "--json")), &users); err != nil {
		t.Fatal(err)
	}
	if len(users) != 2 || users[0]["email"] != "amy@example.com" || users[0]["tier"] != "paid" || users[0]["role"] != "reviewer" ||
		users[0]["web_password"] != true || users[0]["submissions_per_hour"] != nil || users[0]["name"] != "Amy A" ||
		users[1]["email"] != "zed@example.com" || users[1]["submissions_per_hour"] != float64(7) || users[1]["web_password"] != false {
		t.Fatalf("user list --json: %v", users)
	}
	for _, u := range users {
		for k := range u {
			if strings.Contains(k, "hash") {
				t.Fatalf("user list prints %s", k)
			}
		}
	}
	text := in.mustCLI("user", "list")
	if lines := strings.Split(strings.TrimSpace(text), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "EMAIL") ||
		!regexp.MustCompile(`^zed@example\.com\s+user-[0-9a-f]{8}\s+free\s+submitter\s+7\s+no\s`).MatchString(lines[2]) {
		t.Fatalf("user list:\n%s", text)
	}

	// set-tier: the running daemon applies it to the next request.
	if out := in.mustCLI("user", "set-tier", "--email", "ZED@example.com", "--tier", "paid"); !strings.Contains(out, "zed@example.com: tier paid, role submitter") {
		t.Fatalf("set-tier: %q", out)
	}
	eventually(t, "paid tier applied", func() bool { return d.do("GET", base+"/threat-feed", tok, "").code == 200 })
	if out := in.mustCLI("user", "set-role", "--email", "zed@example.com", "--role", "admin"); !strings.Contains(out, "tier paid, role admin") {
		t.Fatalf("set-role: %q", out)
	}
	eventually(t, "role visible", func() bool {
		return d.do("GET", base+"/account", tok, "").body["role"] == "admin"
	})

	// token list: never the token, its last four characters.
	in.mustCLI("token", "issue", "--email", "zed@example.com", "--name", "ci")
	in.mustCLI("token", "revoke", "--token", tok)
	var toks []map[string]any
	out := in.mustCLI("token", "list", "--email", "zed@example.com", "--json")
	if strings.Contains(out, tok) || strings.Contains(out, tok[4:len(tok)-4]) {
		t.Fatalf("token list shows the token: %s", out)
	}
	if err := json.Unmarshal([]byte(out), &toks); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "name", "hint", "created_at", "last_used_at", "revoked_at"} {
		if _, ok := toks[0][k]; !ok || len(toks[0]) != 6 {
			t.Fatalf("token list --json: %v, want the keys id, name, hint, created_at, last_used_at, revoked_at", toks[0])
		}
	}
	if len(toks) != 2 || toks[0]["name"] != "ci" || toks[0]["revoked_at"] != nil || toks[1]["revoked_at"] == nil ||
		toks[1]["hint"] != "…"+tok[len(tok)-4:] {
		t.Fatalf("token list --json: %v", toks)
	}
	if text := in.mustCLI("token", "list", "--email", "zed@example.com"); !strings.Contains(text, "…"+tok[len(tok)-4:]) || strings.Count(text, "\n") != 3 {
		t.Fatalf("token list:\n%s", text)
	}

	// version: what make build stamped, and the commit.
	v := in.mustCLI("version")
	if !regexp.MustCompile(`^threatd \S+\ncommit [0-9a-f]{40}( \(modified\))?\ngo1\.\d+`).MatchString(v) || strings.HasPrefix(v, "threatd dev\n") {
		t.Fatalf("version: %q", v)
	}

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"user", "set-tier", "--email", "zed@example.com", "--tier", "gold"}, "invalid --tier: must be one of free, paid"},
		{[]string{"user", "set-role", "--email", "zed@example.com", "--role", "root"}, "invalid --role: must be one of submitter, reviewer, admin"},
		{[]string{"user", "set-tier", "--email", "nobody@example.com", "--tier", "paid"}, "user not found: nobody@example.com"},
		{[]string{"user", "set-tier", "--email", "zed@example.com"}, `required flag(s) "tier" not set`},
		{[]string{"token", "list", "--email", "nobody@example.com"}, "user not found"},
		{[]string{"review", "verify", "not-a-uuid"}, "invalid ID argument"},
		{[]string{"review", "approve-revision", "not-a-uuid"}, "invalid REV argument"},
		{[]string{"import"}, "name a source and what to import: threatd import osv PATH..."},
		{[]string{"import", "osv"}, "name what to import: threatd import osv PATH..."},
		{[]string{"import", "osv", filepath.Join(in.dir, "typo")}, "no such file or directory"},
	}
	for _, c := range cases {
		r := in.cli(c.args...)
		if r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("threatd %v: exit %d stderr %q; want exit 1 mentioning %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if help := in.mustCLI("review", "verify", "--help"); !regexp.MustCompile(`--note string\s+a note kept with the decision \(optional\)`).MatchString(help) {
		t.Fatalf("verify --help says the note is required:\n%s", help)
	}
}

// TestStorageDSNMistakes: a PostgreSQL address given to the SQLite plugin,
// or a SQLite file in a directory that does not exist, is refused before
// anything is created; the password of the address is not printed.
func TestStorageDSNMistakes(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	cwd := t.TempDir()
	r := in.cliIn(cwd, "user", "list", "--storage-dsn", "postgres://u:secret-pw@localhost/db")
	if r.code != 1 || !strings.Contains(r.stderr, "is a URL, but the sqlite storage plugin takes a file path") ||
		!strings.Contains(r.stderr, "--storage-plugin postgres") || strings.Contains(r.stderr, "secret-pw") {
		t.Fatalf("postgres DSN with the sqlite plugin: exit %d\n%s", r.code, r.stderr)
	}
	missing := filepath.Join(in.dir, "no-such-dir", "threatd.db")
	r = in.cliIn(cwd, "user", "list", "--storage-dsn", missing)
	if r.code != 1 || !strings.Contains(r.stderr, "the directory "+filepath.Dir(missing)+" of storage.dsn") {
		t.Fatalf("SQLite DSN in a missing directory: exit %d\n%s", r.code, r.stderr)
	}
	if entries, err := os.ReadDir(cwd); err != nil || len(entries) != 0 {
		t.Fatalf("%s: %d entries created by refused commands (%v)", cwd, len(entries), err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Fatalf("the missing directory was created: %v", err)
	}
}
