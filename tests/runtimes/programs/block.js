// The 3:1 program of the off-CPU Node tests: drive() calls alpha() three
// times for each beta(); each blocks synchronously in Atomics.wait on a
// SharedArrayBuffer for the same 2 ms (a futex wait under the interpreter's
// own frames), so the time off CPU under drive -> alpha is three times that
// under drive -> beta. The first argument is how many seconds to run.
'use strict';
const cell = new Int32Array(new SharedArrayBuffer(4));

function alpha(ms) {
  Atomics.wait(cell, 0, 0, ms);
}

function beta(ms) {
  Atomics.wait(cell, 0, 0, ms);
}

function drive(seconds) {
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    alpha(2);
    alpha(2);
    alpha(2);
    beta(2);
  }
}

drive(process.argv.length > 2 ? Number(process.argv[2]) : 2);
