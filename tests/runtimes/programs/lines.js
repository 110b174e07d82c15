// The line-number program of the Node runtime tests: hot() has two hot
// lines, the first three times as costly as the second (the same call,
// three times and once). The first argument is how many seconds to run.
//
// work() is larger than TurboFan inlines (571 bytes of bytecode, over its
// 460), so that hot's frame stays at its calls: V8 records where its
// optimized code is at each call (a caller's line is exact in every tier),
// but between calls only with a profiler's detailed line information
// (docs/node.md, "Lines").
'use strict';

function work(n) {
  let x = 0;
  for (let i = 0; i < n; i++) {
    const k = i % 30, s = i * i;
    if (k < 6) x += k === 0 ? s % 7 : k === 1 ? (s + 1) % 7 : k === 2 ? (s + 2) % 7 : k === 3 ? (s + 3) % 7 : k === 4 ? (s + 4) % 7 : (s + 5) % 7;
    else if (k < 12) x += k === 6 ? (s + 6) % 7 : k === 7 ? (s + 7) % 7 : k === 8 ? (s + 8) % 7 : k === 9 ? (s + 9) % 7 : k === 10 ? (s + 10) % 7 : (s + 11) % 7;
    else if (k < 18) x += k === 12 ? (s + 12) % 7 : k === 13 ? (s + 13) % 7 : k === 14 ? (s + 14) % 7 : k === 15 ? (s + 15) % 7 : k === 16 ? (s + 16) % 7 : (s + 17) % 7;
    else if (k < 24) x += k === 18 ? (s + 18) % 7 : k === 19 ? (s + 19) % 7 : k === 20 ? (s + 20) % 7 : k === 21 ? (s + 21) % 7 : k === 22 ? (s + 22) % 7 : (s + 23) % 7;
    else x += k === 24 ? (s + 24) % 7 : k === 25 ? (s + 25) % 7 : k === 26 ? (s + 26) % 7 : k === 27 ? (s + 27) % 7 : k === 28 ? (s + 28) % 7 : (s + 29) % 7;
  }
  return x;
}

function hot(n) {
  let a = 0;
  let b = 0;
  a += work(n); a += work(n); a += work(n);  // line A
  b += work(n);  // line B
  return a + b;
}

function drive(seconds) {
  const end = Date.now() + seconds * 1000;
  let sink = 0;
  while (Date.now() < end) sink += hot(20000);
  return sink;
}

drive(process.argv.length > 2 ? Number(process.argv[2]) : 3);
