// The inlining program of the Node runtime tests: outer() calls ta() three
// times for each tb(), both small enough that TurboFan inlines them into
// outer's optimized code (and outer into drive's). Each must still be a
// frame of its own, under outer. The first argument is how many seconds to
// run.
'use strict';

function ta(i) { return (i * i + 1) % 7; }
function tb(i) { return (i * i + 1) % 7; }

function outer(n) {
  let x = 0;
  for (let i = 0; i < n; i++) {
    x += ta(i);
    x += ta(i + 1);
    x += ta(i + 2);
    x += tb(i + 3);
  }
  return x;
}

function drive(seconds) {
  const end = Date.now() + seconds * 1000;
  let sink = 0;
  while (Date.now() < end) sink += outer(20000);
  return sink;
}

drive(process.argv.length > 2 ? Number(process.argv[2]) : 3);
