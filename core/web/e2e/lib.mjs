// Shared by the browser scripts (journey.mjs, analysis.mjs): the
// daemon's address, the checks every page gets (console errors, uncaught
// exceptions, CSP violations, labels, one h1 and a main landmark, no
// sideways scrolling on a phone) and the navigation helpers. A script
// reports what these gathered in problems, and its screenshots go to
// SCREENSHOT_DIR.
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const env = (k, d) => {
  const v = process.env[k] ?? d;
  if (v === undefined) throw new Error(`${k} is not set`);
  return v;
};
const BASE = env("THREATD_URL");
const API = BASE + env("THREATD_API_BASE", "/functions/v1");
const SHOTS = env("SCREENSHOT_DIR");
mkdirSync(SHOTS, { recursive: true });

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

const problems = []; // console errors, page errors and CSP violations, with the page they came from
const expected = []; // messages a step expects once (e.g. the 404 a visitor must get)

const pages = new Map(); // who → page, for screenshots on failure

function watch(page, who) {
  pages.set(who, page);
  page.on("console", (m) => {
    if (m.type() !== "error" && m.type() !== "warning") return;
    const text = m.text();
    const i = expected.findIndex((re) => re.test(text));
    if (i >= 0) {
      expected.splice(i, 1);
      return;
    }
    if (m.type() === "error" || /Content Security Policy/i.test(text)) problems.push(`${who} ${page.url()}: console ${m.type()}: ${text}`);
  });
  page.on("pageerror", (e) => problems.push(`${who} ${page.url()}: uncaught: ${e.message}`));
  return page;
}

// The CSP violations a page has seen, recorded by a listener installed
// before any of the page's own scripts run.
const cspListener = () => {
  window.__csp = [];
  document.addEventListener("securitypolicyviolation", (e) =>
    window.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"}`),
  );
};

async function newContext(browser, opts = {}) {
  const ctx = await browser.newContext({
    ignoreHTTPSErrors: true, // the test daemon's self-signed certificate
    viewport: { width: 1280, height: 800 },
    locale: "en-GB",
    ...opts,
  });
  await ctx.addInitScript(cspListener);
  return ctx;
}

// audit checks the page as it is now.
async function audit(page, name) {
  const found = await page.evaluate(() => {
    const out = [];
    for (const el of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
      const named = (el.labels && el.labels.length > 0 && [...el.labels].some((l) => l.textContent.trim())) ||
        el.getAttribute("aria-label") || el.getAttribute("aria-labelledby");
      if (!named) out.push(`unlabelled ${el.tagName.toLowerCase()} name=${el.name} id=${el.id}`);
    }
    for (const el of document.querySelectorAll("button, a[href]")) {
      if (el.hidden || el.closest("[hidden]")) continue;
      if (!el.textContent.trim() && !el.getAttribute("aria-label")) out.push(`nameless ${el.tagName.toLowerCase()} ${el.outerHTML.slice(0, 80)}`);
    }
    for (const el of document.querySelectorAll("img:not([alt])")) out.push(`image without alt: ${el.src}`);
    const h1 = document.querySelectorAll("h1").length;
    if (h1 !== 1) out.push(`${h1} h1 elements`);
    if (!document.querySelector("main")) out.push("no main landmark");
    if (!document.documentElement.lang) out.push("no lang on html");
    // (Chromium's autofill leaves empty style attributes on filled fields.)
    for (const el of document.querySelectorAll("[style]:not([style='']), style")) out.push(`inline style: ${el.outerHTML.slice(0, 120)}`);
    for (const s of document.scripts) if (!s.src) out.push("inline script");
    return { issues: out, csp: window.__csp || [] };
  });
  for (const i of found.issues) problems.push(`${name}: ${i}`);
  for (const v of found.csp) problems.push(`${name}: CSP violation: ${v}`);
}

// phoneCheck: nothing scrolls sideways, no element is wider than the
// viewport, and no table cell breaks a word mid-way.
async function phoneCheck(page, path) {
  const found = await page.evaluate(() => {
    const out = [];
    const w = window.innerWidth;
    if (document.documentElement.scrollWidth > w) out.push(`the page scrolls sideways by ${document.documentElement.scrollWidth - w}px`);
    for (const el of document.querySelectorAll("body *")) {
      if (el.closest(".table-wrap, .markdown pre, .skip, .sr-only")) continue; // scroll inside their own box, or hidden on purpose
      const r = el.getBoundingClientRect();
      if (r.width > 0 && (r.right > w + 1 || r.left < -1)) out.push(`${el.tagName.toLowerCase()}.${el.className} spans ${Math.round(r.left)}–${Math.round(r.right)}px`);
    }
    for (const el of document.querySelectorAll("td, th")) {
      if (getComputedStyle(el).overflowWrap === "anywhere") out.push(`a ${el.tagName.toLowerCase()} breaks words anywhere`);
    }
    return out.slice(0, 10);
  });
  for (const f of found) problems.push(`phone ${path}: ${f}`);
  await audit(page, `phone ${path}`);
}

// shot audits the page and saves its screenshot.
async function shot(page, name) {
  await audit(page, name);
  await capture(page, `${name}.png`);
}

// capture saves a full-page screenshot. Chromium on a loaded machine (the
// race-enabled suite beside it) can fail one with "Unable to capture
// screenshot" although the page is fine; that is tried again, twice,
// and any other error is the test's.
async function capture(page, file) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await page.screenshot({ path: join(SHOTS, file), fullPage: true });
    } catch (e) {
      if (attempt >= 3 || !String(e).includes("Unable to capture screenshot")) throw e;
      await page.waitForTimeout(500);
    }
  }
}

// go loads a path and checks its status.
async function go(page, path, status = 200) {
  const resp = await page.goto(BASE + path);
  check(resp.status() === status, `GET ${path}: status ${resp.status()}, want ${status}`);
  return resp;
}

// submitForm clicks a submit button and checks the status of the page it loads.
async function submitForm(page, button, status = 200) {
  const [resp] = await Promise.all([
    // The page the post lands on, after any redirect (post/redirect/get).
    page.waitForResponse((r) => r.request().isNavigationRequest() && r.frame() === page.mainFrame() && (r.status() < 300 || r.status() >= 400)),
    button.click(),
  ]);
  check(resp.status() === status, `${button}: ${resp.request().method()} ${resp.url()}: status ${resp.status()}, want ${status}`);
  await page.waitForLoadState("load");
  return resp;
}

const role = (page, r, name) => page.getByRole(r, { name, exact: true });
// A link or button of the main navigation, by its name.
const nav = (page, r, name) => page.getByRole("navigation", { name: "Main" }).getByRole(r, { name, exact: true });

// logIn logs in through the form.
async function logIn(page, email, password, status = 200) {
  await go(page, "/login");
  await page.getByLabel("Email", { exact: true }).fill(email);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await submitForm(page, role(page, "button", "Log in"), status);
}

// launch starts headless Chromium.
function launch(chromium) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

// finish ends a script: its summary on success; on failure the reason,
// what the pages saw, and a screenshot of each page.
async function finish(browser, run) {
  const started = Date.now();
  const took = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  try {
    const out = await run();
    console.error(`the journey took ${took()}`);
    check(expected.length === 0, `console messages expected but not seen: ${expected.join(", ")}`);
    check(problems.length === 0, "problems seen in the browser:\n  " + problems.join("\n  "));
    console.log(JSON.stringify(out));
  } catch (e) {
    console.error(e.stack || String(e));
    if (problems.length) console.error("also seen in the browser:\n  " + problems.join("\n  "));
    for (const [who, page] of pages) {
      const path = join(SHOTS, `failure-${who}.png`);
      try {
        await page.screenshot({ path, fullPage: true });
        console.error(`${who} was at ${page.url()}: ${path}`);
      } catch {}
    }
    process.exitCode = 1;
  } finally {
    // Closing Chromium has hung on a loaded machine after the journey was
    // done: wait for it a while, then leave (Playwright kills the browser
    // it launched when this process exits).
    let timer;
    const closed = await Promise.race([
      browser.close().then(() => true),
      new Promise((resolve) => { timer = setTimeout(() => resolve(false), 30000); }),
    ]);
    clearTimeout(timer);
    if (!closed) {
      console.error(`the browser did not close within 30 s (at ${took()}); leaving it`);
      process.exit(process.exitCode ?? 0);
    }
  }
}

export { env, BASE, API, SHOTS, check, problems, expected, pages, watch, newContext, audit, phoneCheck, shot, capture, go, submitForm, role, nav, logIn, launch, finish };
