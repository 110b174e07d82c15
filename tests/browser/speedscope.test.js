// speedscope (the npm package, served locally) in headless Chromium:
// - opens our speedscope export without an import error and shows our
//   hottest function in its sandwich table;
// - the folded export drawn by our SVG writer and imported by speedscope shows
//   the same total as the folded file itself.
// Usage: node speedscope.test.js  (env ARCPROF_EXPORT_FIXTURES, NODE_PATH with
// playwright-core and speedscope, ARCPROF_SCREENSHOT_DIR)
"use strict";
const { execFileSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { launchChromium, serve, readFolded, run, skip } = require("./harness");

function speedscopeDir() {
  try {
    return path.join(path.dirname(require.resolve("speedscope/package.json")), "dist", "release");
  } catch (e) {
    skip("the speedscope npm package is not installed (the browser_npm_setup test installs it)");
  }
}

// Opens a file in speedscope, switches to the sandwich view and returns its
// rows as {total, self, name}.
async function sandwich(page, base, file, errors) {
  const url = `${base}/data/${file}`;
  await page.goto("about:blank");  // a new document: speedscope imports once per load
  await page.goto(`${base}/speedscope/index.html#profileURL=${encodeURIComponent(url)}`);
  // speedscope titles the page "<profile name> - speedscope" once the import is done.
  await page.waitForFunction(() => / - speedscope$/.test(document.title), null, { timeout: 20000 });
  await page.keyboard.press("3");  // the sandwich view
  // Sandwich rows: "Total | Self | Symbol Name", the two values as "1,234 (56%)".
  const sandwichRows = () =>
    Array.from(document.querySelectorAll("tr")).filter((r) => {
      const cells = r.querySelectorAll("td");
      return cells.length === 3 && /^[\d,]+ \(.*%\)$/.test(cells[0].textContent) &&
        /^[\d,]+ \(.*%\)$/.test(cells[1].textContent);
    });
  await page.waitForFunction(`(${sandwichRows})().length > 0`, null, { timeout: 20000 });
  const rows = await page.evaluate(`(${sandwichRows})()
      .filter((r) => r.querySelectorAll("td").length === 3)
      .map((r) => {
        const cells = Array.from(r.querySelectorAll("td")).map((c) => c.textContent);
        const number = (s) => +s.split(" ")[0].replace(/,/g, "");
        return { total: number(cells[0]), self: number(cells[1]), name: cells[2] };
      })`);
  const text = await page.evaluate(() => document.body.innerText);
  for (const bad of ["Something went wrong", "Unrecognized format", "Failed to load"]) {
    if (text.includes(bad)) errors.push(`${file}: speedscope says "${bad}"`);
  }
  return rows;
}

run("speedscope", async (check) => {
  const release = speedscopeDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "arcprof-browser-"));
  execFileSync(process.env.ARCPROF_EXPORT_FIXTURES, [dir]);
  const shots = process.env.ARCPROF_SCREENSHOT_DIR || dir;
  const server = await serve({ "/speedscope/": release, "/data/": dir });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    const errors = [];
    const imports = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("response", (r) => {
      if (r.status() >= 400 && !r.url().endsWith("/favicon.ico")) errors.push(`HTTP ${r.status()} for ${r.url()}`);
    });
    page.on("console", (m) => {
      // A 404 is reported separately, with its URL.
      if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(m.text());
      if (m.text().startsWith("Importing as")) imports.push(m.text());
    });

    // Our export: the active profile is the busiest thread (busy loop, 1090
    // samples); its hottest function is f_heavy (755 self samples).
    const ours = await sandwich(page, server.base, "profile.speedscope.json", errors);
    await page.screenshot({ path: path.join(shots, "speedscope-export.png") });
    check.equal(imports[0], "Importing as speedscope json file", "speedscope reads the file as its own format");
    check.ok(ours.length > 0, `sandwich table has rows (${ours.length})`);
    const bySelf = [...ours].sort((a, b) => b.self - a.self);
    check.equal(bySelf[0] && bySelf[0].name, "f_heavy", "the hottest function by self time");
    check.equal(bySelf[0] && bySelf[0].self, 755, "f_heavy's self samples");
    check.equal(ours.reduce((s, r) => s + r.self, 0), 1090, "the busy loop thread's total");
    check.ok((await page.evaluate(() => document.body.innerText)).includes("f_heavy"), "the page shows f_heavy");

    // The same total three ways: the folded file, our SVG writer on it, speedscope on it.
    const folded = readFolded(path.join(dir, "profile.folded")).reduce((s, x) => s + x.count, 0);
    const fromFolded = await sandwich(page, server.base, "profile.folded", errors);
    const speedscopeTotal = fromFolded.reduce((s, r) => s + r.self, 0);
    await page.goto(`${server.base}/data/folded.svg`);
    const rootTitle = await page.locator(".frames > g title").first().textContent();
    const svgTotal = +/^all \(([\d,]+) /.exec(rootTitle)[1].replace(/,/g, "");
    check.equal(folded, 1995, "folded total");
    check.equal(svgTotal, folded, "SVG writer total from the folded file");
    check.equal(speedscopeTotal, folded, "speedscope total from the folded file");
    check.equal(errors.length, 0, `no import or script errors (${errors.join("; ")})`);
  } finally {
    await browser.close();
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
