// The 3:1 program of the Node runtime tests: drive() calls alpha() three
// times for each beta(); both have the same body. With "thread", a
// worker_threads Worker runs side() -> gamma() meanwhile. The first argument
// is how many seconds to run.
//
// The bodies are larger than TurboFan inlines (577 bytes of bytecode, over
// its 460): functions V8 inlined into their caller's optimized code are not
// expanded yet (docs/node.md), and a small alpha would be inlined into an
// optimized drive after about a second.
'use strict';
const { Worker, isMainThread, workerData } = require('worker_threads');

function alpha(n) {
  let x = 0;
  for (let i = 0; i < n; i++) {
    switch (i & 31) {
      case 0: x += (i * i + 0) % 7; break;
      case 1: x += (i * i + 1) % 7; break;
      case 2: x += (i * i + 2) % 7; break;
      case 3: x += (i * i + 3) % 7; break;
      case 4: x += (i * i + 4) % 7; break;
      case 5: x += (i * i + 5) % 7; break;
      case 6: x += (i * i + 6) % 7; break;
      case 7: x += (i * i + 7) % 7; break;
      case 8: x += (i * i + 8) % 7; break;
      case 9: x += (i * i + 9) % 7; break;
      case 10: x += (i * i + 10) % 7; break;
      case 11: x += (i * i + 11) % 7; break;
      case 12: x += (i * i + 12) % 7; break;
      case 13: x += (i * i + 13) % 7; break;
      case 14: x += (i * i + 14) % 7; break;
      case 15: x += (i * i + 15) % 7; break;
      case 16: x += (i * i + 16) % 7; break;
      case 17: x += (i * i + 17) % 7; break;
      case 18: x += (i * i + 18) % 7; break;
      case 19: x += (i * i + 19) % 7; break;
      case 20: x += (i * i + 20) % 7; break;
      case 21: x += (i * i + 21) % 7; break;
      case 22: x += (i * i + 22) % 7; break;
      case 23: x += (i * i + 23) % 7; break;
      default: x += (i * i) % 7;
    }
  }
  return x;
}

function beta(n) {
  let x = 0;
  for (let i = 0; i < n; i++) {
    switch (i & 31) {
      case 0: x += (i * i + 0) % 7; break;
      case 1: x += (i * i + 1) % 7; break;
      case 2: x += (i * i + 2) % 7; break;
      case 3: x += (i * i + 3) % 7; break;
      case 4: x += (i * i + 4) % 7; break;
      case 5: x += (i * i + 5) % 7; break;
      case 6: x += (i * i + 6) % 7; break;
      case 7: x += (i * i + 7) % 7; break;
      case 8: x += (i * i + 8) % 7; break;
      case 9: x += (i * i + 9) % 7; break;
      case 10: x += (i * i + 10) % 7; break;
      case 11: x += (i * i + 11) % 7; break;
      case 12: x += (i * i + 12) % 7; break;
      case 13: x += (i * i + 13) % 7; break;
      case 14: x += (i * i + 14) % 7; break;
      case 15: x += (i * i + 15) % 7; break;
      case 16: x += (i * i + 16) % 7; break;
      case 17: x += (i * i + 17) % 7; break;
      case 18: x += (i * i + 18) % 7; break;
      case 19: x += (i * i + 19) % 7; break;
      case 20: x += (i * i + 20) % 7; break;
      case 21: x += (i * i + 21) % 7; break;
      case 22: x += (i * i + 22) % 7; break;
      case 23: x += (i * i + 23) % 7; break;
      default: x += (i * i) % 7;
    }
  }
  return x;
}

function gamma(n) {
  let x = 0;
  for (let i = 0; i < n; i++) {
    switch (i & 31) {
      case 0: x += (i * i + 0) % 7; break;
      case 1: x += (i * i + 1) % 7; break;
      case 2: x += (i * i + 2) % 7; break;
      case 3: x += (i * i + 3) % 7; break;
      case 4: x += (i * i + 4) % 7; break;
      case 5: x += (i * i + 5) % 7; break;
      case 6: x += (i * i + 6) % 7; break;
      case 7: x += (i * i + 7) % 7; break;
      case 8: x += (i * i + 8) % 7; break;
      case 9: x += (i * i + 9) % 7; break;
      case 10: x += (i * i + 10) % 7; break;
      case 11: x += (i * i + 11) % 7; break;
      case 12: x += (i * i + 12) % 7; break;
      case 13: x += (i * i + 13) % 7; break;
      case 14: x += (i * i + 14) % 7; break;
      case 15: x += (i * i + 15) % 7; break;
      case 16: x += (i * i + 16) % 7; break;
      case 17: x += (i * i + 17) % 7; break;
      case 18: x += (i * i + 18) % 7; break;
      case 19: x += (i * i + 19) % 7; break;
      case 20: x += (i * i + 20) % 7; break;
      case 21: x += (i * i + 21) % 7; break;
      case 22: x += (i * i + 22) % 7; break;
      case 23: x += (i * i + 23) % 7; break;
      default: x += (i * i) % 7;
    }
  }
  return x;
}

function drive(seconds) {
  const end = Date.now() + seconds * 1000;
  let sink = 0;
  let rounds = 0;
  while (Date.now() < end) {
    sink += alpha(30000);
    sink += alpha(30000);
    sink += alpha(30000);
    sink += beta(30000);
    rounds++;
  }
  // bench/node_bench.sh: the work done per second of CPU.
  if (process.env.ARCPROF_SPLIT_RATE) {
    console.log(`rounds_per_cpu_second ${(rounds / (process.cpuUsage().user / 1e6)).toFixed(1)}`);
  }
  return sink;
}

function side(seconds) {
  const end = Date.now() + seconds * 1000;
  let sink = 0;
  while (Date.now() < end) sink += gamma(30000);
  return sink;
}

if (!isMainThread) {
  side(workerData);
} else {
  const seconds = process.argv.length > 2 ? Number(process.argv[2]) : 3;
  if (process.argv[3] === 'thread') new Worker(__filename, { workerData: seconds });
  drive(seconds);
}
