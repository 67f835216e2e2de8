package main_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// pkgReport is a minimal package report's JSON.
func pkgReport(name string) string {
	return fmt.Sprintf(`{"report_type":"package","resource_identifier":%q,"registry":"npm","threat_description":"steals tokens","contact_email":"sam-private@example.com"}`, name)
}

// TestWebAccount: Settings → Account as a user runs it (rename, change the
// password with the current one, log out other sessions, delete the
// account) and the administrators' users page (disable and enable), with
// cache.freshness far above the test's patience, so that "at once" is
// this daemon's own doing.
func TestWebAccount(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "cache:\n  freshness: 60s\n")
	in.user("ada@example.com", "--role", "admin", "--name", "Ada")
	in.mustCLIStdin("ada's long password", "user", "set-password", "--email", "ada@example.com")
	samToken := in.user("sam@example.com", "--name", "Sam")
	checker := in.user("checker@example.com")
	in.mustCLIStdin("sam's first password", "user", "set-password", "--email", "sam@example.com")
	d := in.serve()
	login := func(b *browser, email, pw string) page {
		b.get("/login")
		return b.post("/login", url.Values{"email": {email}, "password": {pw}, "next": {"/settings"}})
	}
	ada := in.browser(d)
	login(ada, "ada@example.com", "ada's long password")
	kept := d.submit(samToken, pkgReport("account-kept"))
	// Verified in the web queue: this daemon sees it at once.
	ada.get("/review")
	ada.post("/review/threats/"+kept, url.Values{"decision": {"verify"}, "version": {"1"}}).expect(t, 200, "is verified")
	pending := d.submit(samToken, pkgReport("account-pending"))
	isMalicious := func(name string) bool {
		r := d.do("GET", checkPath("report_type", "package", "resource_identifier", name, "ecosystem", "npm"), checker, "")
		return r.code == 200 && r.body["malicious"] == true
	}
	if !isMalicious("account-kept") {
		t.Fatal("the verified report is not found")
	}

	sam, sam2 := in.browser(d), in.browser(d)
	login(sam2, "sam@example.com", "sam's first password").expect(t, 200, "Your account")
	login(sam, "sam@example.com", "sam's first password").
		expect(t, 200, "Your account", "sam@example.com", "In this browser and 1 other session.", `aria-current="page">Account</a>`, "API Tokens")

	// Rename: the rules of sign-up.
	sam.post("/settings/account/name", url.Values{"name": {"  "}}).expect(t, 400, "Public name is required.")
	sam.post("/settings/account/name", url.Values{"name": {"Sam\x07"}}).expect(t, 400, "Public name contains a control character.")
	sam.post("/settings/account/name", url.Values{"name": {"Sam Smith"}}).
		expect(t, 200, "Your public name is now “Sam Smith”.", "Logged in as Sam Smith")

	// The password: the current one is required; other sessions end.
	sam.post("/settings/account/password", url.Values{"current_password": {"not my password"}, "password": {"sam's second password"}}).
		expect(t, 400, "This is not your current password.")
	sam.post("/settings/account/password", url.Values{"current_password": {"sam's first password"}, "password": {"short"}}).
		expect(t, 400, "New password must be at least 10 characters")
	sam.post("/settings/account/password", url.Values{"current_password": {"sam's first password"}, "password": {"sam's second password"}}).
		expect(t, 200, "Your password is changed. Your 1 other session is logged out.", "Only in this browser.")
	if p := sam2.get("/me/submissions"); p.url != "/login" {
		t.Fatalf("the other session still works after a password change: %s", p.url)
	}
	login(sam2, "sam@example.com", "sam's first password").expect(t, 401, "The e-mail or password is not right.")
	login(sam2, "sam@example.com", "sam's second password").expect(t, 200, "In this browser and 1 other session.")

	// Log out other sessions.
	sam.get("/settings/account")
	sam.post("/settings/account/sessions", url.Values{}).expect(t, 200, "Your 1 other session is logged out.", "Only in this browser.")
	if p := sam2.get("/me/submissions"); p.url != "/login" {
		t.Fatalf("the other session survived Log out other sessions: %s", p.url)
	}

	// Administrators: the users page, Disable after a confirmation.
	sam.get("/admin/users").expect(t, 403, "for administrators")
	ada.get("/admin/users").expect(t, 200, "Users", "sam@example.com", "Sam Smith", "active", "Disable")
	ada.post("/admin/users/disable", url.Values{"email": {"ada@example.com"}}).expect(t, 400, "You cannot disable your own account here")
	ada.post("/admin/users/disable", url.Values{"email": {"sam@example.com"}}).
		expect(t, 200, "Disable sam@example.com?", "revoked", "Disable account", "Cancel")
	if s := d.do("GET", base+"/account", samToken, ""); s.code != 200 {
		t.Fatalf("the confirmation page disabled already: %d", s.code)
	}
	ada.post("/admin/users/disable", url.Values{"email": {"sam@example.com"}, "confirm": {"yes"}}).
		expect(t, 200, "sam@example.com is disabled: 1 token revoked, 1 session ended.", "disabled", "Enable")
	// At once: the token, the session and the log-in.
	d.do("GET", base+"/account", samToken, "").expect(t, 401, "")
	if p := sam.get("/me/submissions"); p.url != "/login" {
		t.Fatalf("a disabled user's session still works: %s", p.url)
	}
	login(sam, "sam@example.com", "sam's second password").expect(t, 403, "This account is disabled.")
	login(sam, "sam@example.com", "a wrong password").expect(t, 401, "The e-mail or password is not right.")
	if !isMalicious("account-kept") {
		t.Fatal("disabling the submitter unpublished their verified report")
	}
	var users []map[string]any
	if err := json.Unmarshal([]byte(in.mustCLI("user", "list", "--json")), &users); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u["email"] == "sam@example.com" && (u["state"] != "disabled" || u["disabled_at"] == nil) {
			t.Fatalf("user list --json after disabling: %v", u)
		}
	}
	ada.post("/admin/users/enable", url.Values{"email": {"sam@example.com"}}).
		expect(t, 200, "sam@example.com is enabled: it can log in again (its old tokens stay revoked).", "active")
	login(sam, "sam@example.com", "sam's second password").expect(t, 200, "Your account")
	d.do("GET", base+"/account", samToken, "").expect(t, 401, "")
	ada.post("/admin/users/nuke", url.Values{"email": {"sam@example.com"}}).expect(t, 404)

	// Delete: the password and the acknowledgement are required.
	sam.post("/settings/account/delete", url.Values{"delete_password": {"sam's second password"}}).
		expect(t, 400, "Tick the box to confirm")
	sam.post("/settings/account/delete", url.Values{"understood": {"yes"}, "delete_password": {"not it at all"}}).
		expect(t, 400, "This is not your password.")
	sam.get("/settings/tokens")
	newToken := tokenRE.FindString(sam.post("/settings/tokens", url.Values{"name": {"last"}}).expect(t, 200, "Copy it now").body)
	d.do("GET", base+"/account", newToken, "").expect(t, 200, "")
	sam.get("/settings/account")
	sam.post("/settings/account/delete", url.Values{"understood": {"yes"}, "delete_password": {"sam's second password"}}).
		expect(t, 200, "Your account is deleted", "1 pending report was withdrawn", "1 API token was revoked", "deleted user")
	d.do("GET", base+"/account", newToken, "").expect(t, 401, "")
	if p := sam.get("/me/submissions"); p.url != "/login" {
		t.Fatalf("the deleted account's session still works: %s", p.url)
	}
	login(sam, "sam@example.com", "sam's second password").expect(t, 401, "The e-mail or password is not right.")
	// The verified report stays published; the pending one is withdrawn;
	// the contact e-mail is gone.
	if !isMalicious("account-kept") {
		t.Fatal("deleting the account unpublished its verified report")
	}
	in.browser(d).get("/threats/"+kept).expect(t, 200, "account-kept")
	show := in.mustCLI("review", "show", pending)
	if !regexp.MustCompile(`(?i)status:?\s+rejected`).MatchString(show) || !strings.Contains(show, "deleted their account") {
		t.Fatalf("review show of the withdrawn report:\n%s", show)
	}
	if show := in.mustCLI("review", "show", kept); strings.Contains(show, "sam-private@example.com") {
		t.Fatalf("the deleted account's contact e-mail is still in its report:\n%s", show)
	}
	ada.get("/admin/users").expect(t, 200, "deleted user", "deleted").lacks(t, "sam@example.com", "Sam Smith")
	// The e-mail is free again.
	again := in.browser(d)
	again.get("/signup")
	again.post("/signup", url.Values{"email": {"sam@example.com"}, "password": {"a brand new password"}}).expect(t, 200, "API Tokens")
}

// TestUserDisableCLI: `threatd user disable|enable` on a running daemon:
// the user's tokens stop working within cache.freshness, the reports stay.
func TestUserDisableCLI(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("zoe@example.com")
	d := in.serve()
	id := d.submit(tok, pkgReport("cli-disable-kept"))
	in.mustCLI("review", "verify", id)
	out := in.mustCLI("user", "disable", "--email", "ZOE@example.com")
	if !strings.Contains(out, "user zoe@example.com: disabled; 1 token revoked, 0 web sessions ended") {
		t.Fatalf("user disable: %q", out)
	}
	eventually(t, "the disabled user's token refused", func() bool { return d.do("GET", base+"/account", tok, "").code == 401 })
	if text := in.mustCLI("user", "list"); !regexp.MustCompile(`zoe@example\.com\s.*\sdisabled\n`).MatchString(text) {
		t.Fatalf("user list after disable:\n%s", text)
	}
	if r := in.cli("token", "issue", "--email", "zoe@example.com"); r.code == 0 || !strings.Contains(r.stderr, "disabled") {
		t.Fatalf("token issue for a disabled user: exit %d, %q", r.code, r.stderr)
	}
	other := in.user("other@example.com")
	d.do("GET", checkPath("report_type", "package", "resource_identifier", "cli-disable-kept", "ecosystem", "npm"), other, "").
		expect(t, 200, "")
	out = in.mustCLI("user", "enable", "--email", "zoe@example.com")
	if !strings.Contains(out, "user zoe@example.com: enabled") {
		t.Fatalf("user enable: %q", out)
	}
	fresh := strings.TrimSpace(in.mustCLI("token", "issue", "--email", "zoe@example.com"))
	eventually(t, "a new token of the enabled user accepted", func() bool { return d.do("GET", base+"/account", fresh, "").code == 200 })
	d.do("GET", base+"/account", tok, "").expect(t, 401, "")
	if r := in.cli("user", "disable", "--email", "nobody@example.com"); r.code == 0 || !strings.Contains(r.stderr, "nobody@example.com") {
		t.Fatalf("disabling an unknown user: exit %d, %q", r.code, r.stderr)
	}
}
