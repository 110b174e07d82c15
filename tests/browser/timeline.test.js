// The timeline chart (`export --format timeline-svg`) in headless Chromium, at
// two window sizes: every label (the first and last time included) inside the
// picture and the window, round y ticks reaching just past the highest stacked
// total, a colour of its own for every series (the idle task and "other"
// apart), and the series stacked: in each window the rectangles sit on each
// other, processes from the bottom, then "other", then the idle task, with
// the heights and tooltips of the fixture's numbers (timeline.json, written
// beside the SVG from the same Timeline).
// Usage: node timeline.test.js  (env ARCPROF_EXPORT_FIXTURES = the fixture tool,
// ARCPROF_SCREENSHOT_DIR = where screenshots go)
"use strict";
const { execFileSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { launchChromium, serve, run } = require("./harness");

const SIZES = [
  { width: 1280, height: 900 },
  { width: 640, height: 480 },
];

function isRoundStep(step) {
  const power = Math.pow(10, Math.floor(Math.log10(step)));
  return [1, 2, 2.5, 5, 10].some((m) => Math.abs(step - m * power) < 1e-9 * power);
}

run("timeline", async (check) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "arcprof-browser-"));
  execFileSync(process.env.ARCPROF_EXPORT_FIXTURES, [dir]);
  const shots = process.env.ARCPROF_SCREENSHOT_DIR || dir;
  const data = JSON.parse(fs.readFileSync(path.join(dir, "timeline.json"), "utf8"));
  const maxTotal = Math.max(...data.windows.map((w) => w.cpu.reduce((a, b) => a + b, 0)));
  const server = await serve({ "/": dir });
  const browser = await launchChromium();
  try {
    for (const size of SIZES) {
      const at = `${size.width}x${size.height}`;
      const page = await browser.newPage({ viewport: size });
      const errors = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(`${server.base}/timeline.svg`);
      const chart = await page.evaluate(() => {
        const svg = document.documentElement;
        const box = (e) => {
          const r = e.getBoundingClientRect();
          return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width };
        };
        return {
          frame: box(svg),
          viewport: { width: window.innerWidth, height: window.innerHeight },
          texts: Array.from(svg.querySelectorAll("text")).map((t) => Object.assign({ text: t.textContent }, box(t))),
          times: Array.from(svg.querySelectorAll(".x-axis text:not(.caption)")).map((t) => t.textContent),
          caption: svg.querySelector(".x-axis .caption").textContent,
          ticks: Array.from(svg.querySelectorAll(".y-axis text")).map((t) => t.textContent),
          gridYs: Array.from(svg.querySelectorAll("g.grid line")).map((l) => +l.getAttribute("y1")),
          series: Array.from(svg.querySelectorAll("g.series")).map((g) => ({
            name: g.querySelector(":scope > title").textContent,
            fill: g.getAttribute("fill"),
            rects: Array.from(g.querySelectorAll("rect")).map((r) => ({
              x: +r.getAttribute("x"), y: +r.getAttribute("y"),
              width: +r.getAttribute("width"), height: +r.getAttribute("height"),
              title: r.querySelector("title").textContent,
            })),
          })),
        };
      });

      // Labels inside the picture, and the picture inside the window's width.
      check.ok(chart.frame.right <= chart.viewport.width + 0.5,
        `${at}: the chart fits the window's width (${chart.frame.width.toFixed(0)} px)`);
      const outside = chart.texts.filter((t) => t.width > 0 &&
        (t.left < chart.frame.left - 0.5 || t.right > chart.frame.right + 0.5 || t.right > chart.viewport.width + 0.5));
      check.equal(outside.map((t) => t.text).join(" | "), "", `${at}: every label inside the picture`);
      // Within one day: times on the axis, the date in the caption.
      const first = data.windows[0].start, last = data.windows[data.windows.length - 1].end;
      check.equal(chart.times[0], first.substring(11, 19), `${at}: the first time label is the first window's start`);
      check.equal(chart.times[chart.times.length - 1], last.substring(11, 19),
        `${at}: the last time label is the last window's end`);
      check.equal(chart.caption, `UTC, ${first.substring(0, 10)}`, `${at}: the caption gives the day`);

      // Round ticks from 0, evenly spaced, the last at or just past the highest stack.
      const ticks = chart.ticks.map((t) => parseFloat(t));
      check.ok(chart.ticks.every((t) => /^\d+(\.\d+)?%$/.test(t)), `${at}: ticks are percentages (${chart.ticks.join(" ")})`);
      const step = ticks[1] - ticks[0];
      check.equal(ticks[0], 0, `${at}: the axis starts at 0%`);
      check.ok(isRoundStep(step), `${at}: the tick step ${step} is 1, 2, 2.5 or 5 times a power of ten`);
      check.ok(ticks.every((v, i) => Math.abs(v - i * step) < 1e-9), `${at}: ticks evenly spaced`);
      const top = ticks[ticks.length - 1];
      check.ok(top >= maxTotal - 1e-9 && top - step < maxTotal,
        `${at}: the last tick ${top}% is the first at or above the highest stack ${maxTotal}%`);

      // A colour per series; the idle task and "other" distinct.
      const fills = chart.series.map((s) => s.fill);
      check.equal(new Set(fills).size, data.series.length, `${at}: ${data.series.length} series, as many colours`);
      const fillOf = (name) => (chart.series.find((s) => s.name === name) || {}).fill;
      check.ok(fillOf("swapper (idle)") && fillOf("other") && fillOf("swapper (idle)") !== fillOf("other"),
        `${at}: the idle task and "other" have colours of their own`);

      // Stacked: processes from the bottom in the timeline's order, then
      // "other", then the idle task.
      const names = chart.series.map((s) => s.name);
      const expectedOrder = data.series.filter((n) => n !== "swapper (idle)" && n !== "other")
        .concat(["other", "swapper (idle)"]);
      check.equal(names.join(", "), expectedOrder.join(", "), `${at}: stacking order`);
      const y0 = Math.max(...chart.gridYs), yTop = Math.min(...chart.gridYs);
      const perPercent = (y0 - yTop) / top;
      let stacked = 0, heights = 0, tooltips = 0, cells = 0;
      data.windows.forEach((w, i) => {
        let base = y0;
        for (const s of chart.series) {
          const v = w.cpu[data.series.indexOf(s.name)];
          const r = s.rects.find((r) => r.title.includes(` ${w.start}: `));
          if (v <= 0) continue;
          cells++;
          if (!r) continue;
          if (Math.abs(r.y + r.height - base) < 0.02) stacked++;
          if (Math.abs(r.height - v * perPercent) < 0.02) heights++;
          if (r.title === `${s.name} ${w.start}: ${v.toFixed(1)}% CPU`) tooltips++;
          base = r.y;
        }
      });
      check.equal(stacked, cells, `${at}: in every window each rectangle sits on the one below`);
      check.equal(heights, cells, `${at}: every rectangle is as high as its CPU share`);
      check.equal(tooltips, cells, `${at}: every rectangle's tooltip names its series, window and share`);
      check.equal(errors.length, 0, `${at}: no script errors (${errors.join("; ")})`);
      await page.screenshot({ path: path.join(shots, `timeline-${at}.png`) });
      check.ok(fs.statSync(path.join(shots, `timeline-${at}.png`)).size > 1000, `${at}: screenshot written`);
      await page.close();
    }
  } finally {
    await browser.close();
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
