// A node workload for bench/capture_size_bench.sh (run with --perf-basic-prof):
// JSON, regular expressions, sorting and closures, so V8 compiles many
// functions. Runs for process.argv[2] seconds of its own CPU time (not wall time:
// a loaded machine gives the same number of samples).
'use strict';
const seconds = Number(process.argv[2] || 10);
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const end = cpu() + seconds;
function makeData(n, seed) {
  const out = [];
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push({ id: i, name: 'n' + x.toString(36), tags: [x % 7, x % 11, x % 13], score: (x % 1000) / 10 });
  }
  return out;
}
function summarize(data) {
  const byTag = new Map();
  for (const d of data) for (const t of d.tags) byTag.set(t, (byTag.get(t) || 0) + d.score);
  return [...byTag.entries()].sort((a, b) => b[1] - a[1]);
}
let checksum = 0;
for (let round = 0; cpu() < end; round++) {
  const data = makeData(20000, round + 1);
  const text = JSON.stringify(data);
  const back = JSON.parse(text);
  back.sort((a, b) => a.name.localeCompare(b.name));
  checksum += summarize(back).length + (text.match(/"n[a-k][0-9a-z]+"/g) || []).length;
}
console.log(checksum);
