// Exposure's pages in a real browser: headless Chromium driven by
// playwright-core. TestExposureBrowser (cmd/threatd) has the firewall
// serve a version to a user that a report verified later names, then
// runs this script: the administrator's exposure page lists the user, and
// the user's account page tells them, at 1280 and at 390 px.
//
// Environment (beside lib.mjs's THREATD_URL and SCREENSHOT_DIR):
//   ADMIN_EMAIL, ADMIN_PASSWORD   an administrator who logs in
//   USER_EMAIL, USER_PASSWORD     the user who got the version
//   EXPOSED_PURL                  the version's package URL
import { chromium } from "playwright-core";
import { env, check, expected, watch, newContext, phoneCheck, shot, capture, go, role, logIn, launch, finish } from "./lib.mjs";

const ADMIN = { email: env("ADMIN_EMAIL"), password: env("ADMIN_PASSWORD") };
const USER = { email: env("USER_EMAIL"), password: env("USER_PASSWORD") };
const PURL = env("EXPOSED_PURL");

const phoneOf = async (browser, ctx, who) =>
  watch(await (await newContext(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true,
    storageState: await ctx.storageState() })).newPage(), who);

const browser = await launch(chromium);
await finish(browser, async () => {
  // The administrator's page.
  const adminCtx = await newContext(browser);
  const admin = watch(await adminCtx.newPage(), "admin");
  await logIn(admin, ADMIN.email, ADMIN.password);
  await go(admin, "/");
  await Promise.all([admin.waitForURL("**/admin/exposure"), admin.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Exposure", exact: true }).click()]);
  await role(admin, "heading", "Exposure").waitFor();
  const table = admin.getByRole("table", { name: "Exposures, newest first" });
  const text = await table.innerText();
  check(text.includes(PURL) && text.includes(USER.email), `the exposure page lacks ${PURL} or ${USER.email}:\n${text}`);
  await shot(admin, "exposure");
  const adminPhone = await phoneOf(browser, adminCtx, "admin-phone");
  await go(adminPhone, "/admin/exposure");
  await phoneCheck(adminPhone, "/admin/exposure");
  await capture(adminPhone, "phone-exposure.png");

  // The user's account page tells them.
  const userCtx = await newContext(browser);
  const user = watch(await userCtx.newPage(), "user");
  await logIn(user, USER.email, USER.password);
  await go(user, "/settings/account");
  await role(user, "heading", "Malicious versions you got").waitFor();
  const notice = await user.locator("section.exposed").innerText();
  check(notice.includes(`You installed ${PURL}`) && notice.includes("found malicious on"), `the account page says:\n${notice}`);
  await shot(user, "account-exposed");
  const userPhone = await phoneOf(browser, userCtx, "user-phone");
  await go(userPhone, "/settings/account");
  await phoneCheck(userPhone, "/settings/account");
  await capture(userPhone, "phone-account-exposed.png");
  // A user is no administrator: the page is not theirs.
  expected.push(/status of 403/);
  await go(user, "/admin/exposure", 403);
  return { checked: PURL };
});
