// Shared pieces of the browser tests: skip/fail rules, a local static HTTP
// server (node's http module), headless Chromium through playwright-core, and
// assertions that collect failures.
"use strict";
const fs = require("fs");
const http = require("http");
const path = require("path");

const SKIP = 77;  // ctest SKIP_RETURN_CODE

function inCi() {
  return process.env.CI === "true";
}

// A missing capability: an explicit skip with the reason, a failure under CI=true.
function skip(reason) {
  if (inCi()) {
    console.error(`FAIL: ${reason} (CI=true: must not skip)`);
    process.exit(1);
  }
  console.log(`SKIP: ${reason}`);
  process.exit(SKIP);
}

function requirePlaywright() {
  try {
    return require("playwright-core");
  } catch (e) {
    skip("playwright-core is not installed (the browser_npm_setup test installs it into the build directory)");
  }
}

function chromiumPath() {
  const candidates = [process.env.ARCPROF_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"];
  for (const c of candidates) {
    if (c && fs.existsSync(c)) return c;
  }
  skip("chromium is missing (Debian package chromium; run scripts/install-deps.sh)");
}

// The machine has no network: every flag that would make Chromium reach out is off.
// playwright-core launches with a fresh temporary --user-data-dir each time.
async function launchChromium() {
  const { chromium } = requirePlaywright();
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      "--no-sandbox",  // root in the test machine
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".css": "text/css",
  ".svg": "image/svg+xml",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
  ".wasm": "application/wasm",
  ".png": "image/png",
  ".woff2": "font/woff2",
};

// Serves `mounts` ({"/prefix/": "/dir"}) on 127.0.0.1 at a free port.
function serve(mounts) {
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent(req.url.split("?")[0]);
    for (const [prefix, dir] of Object.entries(mounts)) {
      if (!url.startsWith(prefix)) continue;
      const file = path.join(dir, url.slice(prefix.length) || "index.html");
      if (!file.startsWith(dir)) break;
      fs.readFile(file, (err, data) => {
        if (err) {
          res.writeHead(404);
          res.end();
          return;
        }
        res.writeHead(200, { "Content-Type": TYPES[path.extname(file)] || "application/octet-stream" });
        res.end(data);
      });
      return;
    }
    res.writeHead(404);
    res.end();
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      resolve({ base: `http://127.0.0.1:${server.address().port}`, close: () => server.close() });
    });
  });
}

class Checks {
  constructor(name) {
    this.name = name;
    this.failures = 0;
  }
  ok(condition, message) {
    if (condition) {
      console.log(`ok: ${message}`);
    } else {
      console.error(`FAILED: ${message}`);
      this.failures++;
    }
  }
  equal(actual, expected, message) {
    this.ok(actual === expected, `${message}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
  near(actual, expected, tolerance, message) {
    this.ok(Math.abs(actual - expected) <= tolerance, `${message}: expected ${expected} +- ${tolerance}, got ${actual}`);
  }
  finish() {
    if (this.failures) {
      console.error(`${this.name}: ${this.failures} check(s) failed`);
      process.exit(1);
    }
    console.log(`${this.name}: all checks passed`);
  }
}

// The folded file's stacks: [{frames: [...names without colour suffix], count}].
function readFolded(file) {
  const stacks = [];
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    const m = /^(.*) (\d+)$/.exec(line);
    if (!m) continue;
    stacks.push({ frames: m[1].split(";").map((f) => f.replace(/_\[[kjiw]\]$/, "")), count: +m[2] });
  }
  return stacks;
}

function run(name, body) {
  const checks = new Checks(name);
  body(checks).then(
    () => checks.finish(),
    (e) => {
      console.error(`${name}: ${e && e.stack ? e.stack : e}`);
      process.exit(1);
    },
  );
}

module.exports = { skip, launchChromium, serve, readFolded, run, inCi };
