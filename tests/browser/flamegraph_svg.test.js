// The SVG flame graph in headless Chromium: titles and total, hover details,
// click-to-zoom (the frame takes the full width, ancestors stretch, others
// hide), reset zoom, regex search (highlighted boxes, matched share computed
// independently from the folded stacks), the icicle layout, and the HTML page
// at two window sizes: there the graph takes the page's width and follows it
// when the window is resized, zoomed or not (the standalone SVG keeps its
// 1,200 px).
// Usage: node flamegraph_svg.test.js  (env ARCPROF_EXPORT_FIXTURES = the fixture tool,
// ARCPROF_SCREENSHOT_DIR = where screenshots go)
"use strict";
const { execFileSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { launchChromium, serve, readFolded, run } = require("./harness");

const FULL_WIDTH = 1180;  // 1200 px minus 10 px padding on each side

run("flamegraph_svg", async (check) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "arcprof-browser-"));
  execFileSync(process.env.ARCPROF_EXPORT_FIXTURES, [dir]);
  const shots = process.env.ARCPROF_SCREENSHOT_DIR || dir;
  const server = await serve({ "/": dir });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1220, height: 400 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${server.base}/profile.svg`);

    // The frame box whose tooltip starts with `prefix` (a regex source).
    const frame = (prefix) =>
      page.locator(".frames > g").filter({ has: page.locator("title").filter({ hasText: new RegExp(`^${prefix}`) }) });
    const width = async (locator) => +(await locator.locator("rect").getAttribute("width"));
    const stacks = readFolded(path.join(dir, "profile.folded"));
    const total = stacks.reduce((s, x) => s + x.count, 0);
    check.equal(total, 1995, "the folded stacks' total");
    check.equal(await page.locator(".frames > g title").first().textContent(), "all (1,995 samples, 100%)",
      "the root frame's tooltip");

    // Hover shows the details line.
    const heavy = frame("f_heavy \\(810 ");
    check.equal(await heavy.count(), 1, "one f_heavy box under main");
    await heavy.hover();
    check.equal(await page.locator(".details").textContent(), "Function: f_heavy (810 samples, 40.60%)",
      "hover details");
    check.near(await width(heavy), (810 / 1995) * FULL_WIDTH, 0.01, "f_heavy width before zoom");

    // Click zooms: the frame fills the width; its ancestors too (faded); a
    // child scales; an unrelated frame hides.
    await heavy.click();
    check.near(await width(heavy), FULL_WIDTH, 0.01, "f_heavy width after zoom");
    check.equal(await heavy.getAttribute("class"), null, "f_heavy is neither hidden nor a faded parent");
    const main = frame("main \\(1,085 ");
    check.near(await width(main), FULL_WIDTH, 0.01, "main (an ancestor) spans the width");
    check.ok((await main.getAttribute("class")).includes("parent"), "main is drawn as a faded parent");
    check.near(await width(frame("inline_helper")), (60 / 810) * FULL_WIDTH, 0.01, "inline_helper rescaled");
    check.ok((await frame("java \\(").getAttribute("class")).includes("hide"), "java is hidden");
    check.ok(!(await page.locator(".unzoom").getAttribute("class")).includes("hide"), "Reset Zoom is shown");
    await page.screenshot({ path: path.join(shots, "flamegraph-zoomed.png") });
    check.ok(fs.statSync(path.join(shots, "flamegraph-zoomed.png")).size > 1000, "screenshot written");

    await page.locator(".unzoom").click();
    check.near(await width(heavy), (810 / 1995) * FULL_WIDTH, 0.01, "Reset Zoom restores f_heavy");
    check.equal(await frame("java \\(").getAttribute("class"), "", "Reset Zoom shows java again");

    // Search: the regex highlights every matching box; the matched share counts
    // each stack once (outermost match), computed here from the folded file.
    for (const term of ["f_heavy", "^(f_light|inline_helper)$", "_raw_spin"]) {
      await page.fill("input.search", term);
      const re = new RegExp(term);
      const expected = stacks.filter((s) => s.frames.some((f) => re.test(f))).reduce((a, s) => a + s.count, 0);
      const highlighted = await page.locator('.frames rect[fill="rgb(230,0,230)"]').count();
      const boxes = await page.locator(".frames > g title").allTextContents();
      const matching = boxes.filter((t) => re.test(t.substring(0, t.lastIndexOf(" (")))).length;
      check.ok(highlighted > 0, `search ${term}: boxes highlighted`);
      check.equal(highlighted, matching, `search ${term}: every matching box is highlighted`);
      check.equal(await page.locator(".matched").textContent(),
        `Matched: ${((100 * expected) / total).toFixed(2)}%`, `search ${term}: matched share`);
    }
    await page.screenshot({ path: path.join(shots, "flamegraph-search.png") });
    await page.fill("input.search", "");
    check.equal(await page.locator('.frames rect[fill="rgb(230,0,230)"]').count(), 0, "clearing the search");
    check.equal(errors.length, 0, `no script errors (${errors.join("; ")})`);

    // The icicle graph: the root at the top; zoom works the same way.
    await page.goto(`${server.base}/profile.icicle.svg`);
    const rootY = +(await frame("all ").locator("rect").getAttribute("y"));
    const heavyY = +(await heavy.locator("rect").getAttribute("y"));
    check.ok(rootY < heavyY, `icicle: the root (y=${rootY}) is above f_heavy (y=${heavyY})`);
    await heavy.click();
    check.near(await width(heavy), FULL_WIDTH, 0.01, "icicle: zoom fills the width");
    check.near(await width(frame("inline_helper")), (60 / 810) * FULL_WIDTH, 0.01, "icicle: child rescaled");

    // The standalone SVG keeps its width in a wider or narrower window.
    for (const wide of [1600, 800]) {
      await page.setViewportSize({ width: wide, height: 400 });
      await page.goto(`${server.base}/profile.svg`);
      check.near(await width(frame("all ")), FULL_WIDTH, 0.01, `svg in a ${wide} px window: 1,180 px of boxes`);
    }

    // The HTML page: the same graph inline plus the tprof table and the xprof
    // list; the graph as wide as the page (its section), at two window sizes.
    const pageWidth = () => page.evaluate(() => {
      const svg = document.querySelector("svg.arcprof-flamegraph");
      return { section: svg.parentNode.clientWidth, svg: svg.getBoundingClientRect().width };
    });
    for (const wide of [1600, 900]) {
      await page.setViewportSize({ width: wide, height: 700 });
      await page.goto(`${server.base}/profile.html`);
      const w = await pageWidth();
      const full = w.section - 20;  // 10 px padding on each side
      check.ok(w.section > wide - 60, `html in a ${wide} px window: the section is ${w.section} px`);
      check.near(w.svg, w.section, 1, `html in a ${wide} px window: the graph takes the section's width`);
      check.near(await width(frame("all ")), full, 0.02, `html in a ${wide} px window: the root spans it`);
      check.near(await width(heavy), (810 / 1995) * full, 0.02, `html in a ${wide} px window: f_heavy in proportion`);
      await page.screenshot({ path: path.join(shots, `flamegraph-html-${wide}.png`) });
    }
    check.ok((await page.locator("table.tprof").textContent()).includes("busy loop_900"), "html: tprof table");
    check.ok((await page.locator("table.xprof").textContent()).includes("f_heavy"), "html: xprof list");
    await heavy.click();
    const narrow = (await pageWidth()).section - 20;
    check.near(await width(heavy), narrow, 0.02, "html: zoom works inline");
    // Zoomed, then the window widens: the zoomed frame still fills the width.
    await page.setViewportSize({ width: 1400, height: 700 });
    await page.waitForFunction((n) => document.querySelector("svg.arcprof-flamegraph").getAttribute("width") !== n,
      String(narrow + 20));
    const wider = (await pageWidth()).section - 20;
    check.ok(wider > narrow, `html: the graph widened with the window (${narrow} -> ${wider} px of boxes)`);
    check.near(await width(heavy), wider, 0.02, "html: the zoomed frame fills the new width");
    check.near(await width(main), wider, 0.02, "html: its ancestor too");
    check.ok((await frame("java \\(").getAttribute("class")).includes("hide"), "html: java stays hidden");
    await page.locator(".unzoom").click();
    check.near(await width(heavy), (810 / 1995) * wider, 0.02, "html: Reset Zoom at the new width");
    check.equal(errors.length, 0, `no script errors (${errors.join("; ")})`);
  } finally {
    await browser.close();
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
