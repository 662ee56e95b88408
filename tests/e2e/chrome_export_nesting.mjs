// Loads each exported Chrome trace into a page in headless chromium and checks there, on the
// parsed events, that every complete (X) event nests within its track (pid, tid): two X events of
// one track are disjoint or one contains the other — what Perfetto and chrome://tracing need to
// draw a flame chart. Prints the violations; exits 1 when there are any.
// Usage: node chrome_export_nesting.mjs <trace.json>...
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const pw = require('playwright-core');
const browser = await pw.chromium.launch({
  executablePath: process.env.CG_CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
});
let bad = 0;
try {
  const page = await browser.newPage();
  for (const file of process.argv.slice(2)) {
    const json = readFileSync(file, 'utf8');
    // The JSON travels as inert text in the page and is parsed there, as a trace viewer would.
    await page.setContent('<script type="application/json" id="trace"></script>');
    await page.evaluate((t) => { document.getElementById('trace').textContent = t; }, json);
    const result = await page.evaluate(() => {
      const events = JSON.parse(document.getElementById('trace').textContent).traceEvents;
      const tracks = new Map();
      for (const e of events) {
        if (e.ph !== 'X') continue;
        const k = e.pid + '/' + e.tid;
        if (!tracks.has(k)) tracks.set(k, []);
        tracks.get(k).push({ name: e.name, s: e.ts, e: e.ts + e.dur });
      }
      const out = [];
      let count = 0;
      for (const [k, xs] of tracks) {
        count += xs.length;
        xs.sort((a, b) => a.s - b.s || b.e - a.e);
        const stack = [];
        for (const x of xs) {
          while (stack.length && stack[stack.length - 1].e <= x.s + 1e-9) stack.pop();
          const top = stack[stack.length - 1];
          if (top && x.e > top.e + 1e-9) out.push(`track ${k}: ${x.name} [${x.s}, ${x.e}] overlaps ${top.name} [${top.s}, ${top.e}]`);
          stack.push(x);
        }
      }
      return { out, count, tracks: tracks.size };
    });
    if (result.count === 0) { console.log(`${file}: no X events`); bad++; }
    for (const v of result.out) { console.log(`${file}: ${v}`); bad++; }
    console.log(`${file}: ${result.count} X events on ${result.tracks} tracks checked`);
  }
} finally {
  await browser.close();
}
process.exit(bad ? 1 : 0);
