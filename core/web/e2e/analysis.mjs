// Package analysis's automatic report in a real browser: headless
// Chromium driven by playwright-core. TestAnalysisBrowser (cmd/threatd)
// has a daemon's firewall fetch a version whose analysis finds it
// suspicious, then runs this script: the reviewer reads the report's
// findings in the review queue and on the report's page, at 1280 and at
// 390 px, and rejects it from the queue. The Go test then checks that the
// firewall released the version.
//
// Environment (beside lib.mjs's THREATD_URL and SCREENSHOT_DIR):
//   REVIEWER_EMAIL, REVIEWER_PASSWORD  a reviewer who logs in
//   ANALYSIS_THREAT_ID                 the automatic report's id
//   ANALYSIS_PACKAGE                   its package's name
//   ANALYSIS_RULE                      its strongest finding's rule
import { chromium } from "playwright-core";
import { env, check, watch, newContext, phoneCheck, shot, capture, go, submitForm, role, logIn, launch, finish } from "./lib.mjs";

const REVIEWER = { email: env("REVIEWER_EMAIL"), password: env("REVIEWER_PASSWORD") };
const ID = env("ANALYSIS_THREAT_ID");
const PKG = env("ANALYSIS_PACKAGE");
const RULE = env("ANALYSIS_RULE");

// findingsShown checks the findings as a page shows them: the automatic
// badge, the rule, a file and "new".
async function findingsShown(scope, where) {
  await scope.getByText("Automatic", { exact: true }).first().waitFor();
  const table = scope.getByRole("table", { name: "Findings, strongest first" }).first();
  await table.waitFor();
  const rows = await table.locator("tbody tr").count();
  check(rows > 0, `${where}: no findings listed`);
  const text = await table.innerText();
  check(text.includes(RULE), `${where}: the findings do not name ${RULE}:\n${text}`);
  check(/\bnew\b/.test(text), `${where}: no finding is marked new:\n${text}`);
  check(/\.js(:\d+)?/.test(text) || /package\.json/.test(text), `${where}: no file named:\n${text}`);
}

const browser = await launch(chromium);
await finish(browser, async () => {
  const ctx = await newContext(browser);
  const rita = watch(await ctx.newPage(), "reviewer");
  await logIn(rita, REVIEWER.email, REVIEWER.password);

  // The queue: the report's article, its findings.
  await go(rita, "/review");
  const article = rita.locator("article.review").filter({ has: rita.getByRole("link", { name: new RegExp(PKG) }) });
  check((await article.count()) === 1, `the queue shows ${await article.count()} articles of ${PKG}`);
  await findingsShown(article, "queue");
  await shot(rita, "analysis-queue");

  // The report's page.
  await go(rita, `/threats/${ID}`);
  await role(rita, "heading", "Findings").waitFor();
  await findingsShown(rita, "report page");
  await shot(rita, "analysis-report");

  // Both on a phone: nothing scrolls sideways, the findings stack.
  const phone = watch(await (await newContext(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true,
    storageState: await ctx.storageState() })).newPage(), "reviewer-phone");
  for (const [path, name] of [["/review", "analysis-queue"], [`/threats/${ID}`, "analysis-report"]]) {
    await go(phone, path);
    await findingsShown(phone, `phone ${path}`);
    await phoneCheck(phone, path);
    await capture(phone, `phone-${name}.png`);
  }

  // The reviewer rejects it from the queue: the version is released.
  await go(rita, "/review");
  await article.getByLabel("Note").fill("A test package: its install script is part of the test.");
  await submitForm(rita, article.getByRole("button", { name: "Reject", exact: true }));
  check((await rita.locator("article.review").filter({ has: rita.getByRole("link", { name: new RegExp(PKG) }) }).count()) === 0, "the rejected report is still in the queue");
  return { rejected: ID };
});
