// Ground truth for perf maps: heavyLoop does three times lightLoop's work.
function heavyLoop(n) { let x = 0; for (let i = 0; i < n; i++) { x = (x + i * 31) ^ (x >>> 3); } return x; }
function lightLoop(n) { let x = 1; for (let i = 0; i < n; i++) { x = (x + i * 17) ^ (x >>> 5); } return x; }
const end = Date.now() + Number(process.argv[2] || 3) * 1000;
let sink = 0;
while (Date.now() < end) { sink += heavyLoop(3e6); sink += lightLoop(1e6); }
if (sink === 0.5) console.log(sink);
