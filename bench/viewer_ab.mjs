#!/usr/bin/env node
// Interleaved A/B of the viewer's first view: the same payload in an older page template (A) and
// in the one built from this checkout (B), loaded alternately in one headless chromium, so both
// see the same machine load. Prints the median and every run of the page's own mark of the frame
// that paints the dataflow graph, and the 1-minute load average before each load. When the graph
// has a `model.layers` group (the synthetic report, an unrolled Llama), also the double-click
// expand of that group and then of `model.layers.7`, each to its relaid-out frame, as
// bench/viewer_firstpaint.mjs times them (once the tree part is in).
//   node bench/viewer_ab.mjs OLD_TEMPLATE.html SOURCE [runs]
// OLD_TEMPLATE.html: `node viewer/build.mjs --html OLD_TEMPLATE.html` run in a checkout of the
// older revision (e.g. `git archive REV viewer package.json | tar -x -C DIR`, with node_modules
// linked into DIR). SOURCE: `synthetic:LAYERS` (viewer/gen-synthetic.mjs, plain arrays as
// payload.cpp writes them) or a page written by `candle-graph view`, whose payload is re-embedded.
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { tmpdir, loadavg } from 'node:os';
import { createRequire } from 'node:module';
import { buildTemplate, assemble } from '../viewer/build.mjs';
import { synth } from '../viewer/gen-synthetic.mjs';
import { launch } from '../viewer/tests/browser.mjs';

const [oldTpl, source, runsArg] = process.argv.slice(2);
if (!oldTpl || !source) { console.error('usage: viewer_ab.mjs OLD_TEMPLATE.html synthetic:LAYERS|PAGE.html [runs]'); process.exit(2); }
const runs = Number(runsArg || 5);
function payloadOf(src) {
  if (src.startsWith('synthetic:')) return synth(Number(src.slice(10)), false, false);
  const s = readFileSync(src, 'utf8');
  const part = (id) => { const m = s.match(new RegExp(`id="${id}">([\\s\\S]*?)</script>`)); return m ? m[1].trim() : ''; };
  const get = (id) => {
    const gz = part(id + '-gz');
    if (gz) return JSON.parse(gunzipSync(Buffer.from(gz, 'base64')).toString());
    const t = part(id); return t ? JSON.parse(t) : {};
  };
  const doc = { ...get('cg-payload'), ...get('cg-payload-tree') };
  if (doc.schema !== 'candle-graph/viewer/1') throw new Error(`${src}: no candle-graph/viewer/1 payload found`);
  return doc;
}
const payload = payloadOf(source);
const dir = mkdtempSync(join(tmpdir(), 'cg-viewer-ab-'));
const A = join(dir, 'a.html'), B = join(dir, 'b.html');
// As src/viewer/payload.cpp embeds them: the main part gzip'd above 1 MB, the tree part above 128 KB.
const opts = { gzipAbove: 1 << 20, treeGzipAbove: 128 << 10 };
writeFileSync(A, assemble(readFileSync(oldTpl, 'utf8'), payload, opts));
writeFileSync(B, assemble(buildTemplate(), payload, opts));
const require = createRequire(import.meta.url);
const { browser, profile } = await launch(require('playwright-core'));
const med = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
const res = { A: [], B: [] }, big = { A: [], B: [] }, one = { A: [], B: [] }, loads = [];
// In-page time from a double-click on the group to the frame after its relayout.
const expand = (page, id) => page.evaluate((gid) => new Promise((resolve) => {
  const p = cg.screenPos(gid); if (!p) { resolve(null); return; }
  const wrap = document.getElementById('canvas-wrap'), t0 = performance.now();
  wrap.dispatchEvent(new MouseEvent('dblclick', { clientX: p.x, clientY: p.y + 8, bubbles: true }));
  const poll = () => (cg.isExpanded(gid) && cg.pending() === 0 ? requestAnimationFrame(() => resolve(performance.now() - t0)) : setTimeout(poll, 1));
  poll();
}), id);
try {
  for (let i = 0; i < runs; i++) for (const [k, f] of [['A', A], ['B', B]]) {
    loads.push(loadavg()[0].toFixed(1));
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.goto('file://' + f, { waitUntil: 'commit' });
    await page.waitForFunction(() => window.cg && cg.marks['dataflow-painted'] !== undefined, null, { timeout: 120000, polling: 20 });
    res[k].push(Math.round(await page.evaluate(() => cg.marks['dataflow-painted'])));
    await page.waitForFunction(() => cg.marks.tree !== undefined, null, { timeout: 120000, polling: 20 });
    const b = await expand(page, 'g:model.layers');
    if (b != null) { big[k].push(Math.round(b)); const o = await expand(page, 'g:model.layers.7'); if (o != null) one[k].push(Math.round(o)); }
    await page.close();
  }
} finally { await browser.close(); rmSync(profile, { recursive: true, force: true }); rmSync(dir, { recursive: true, force: true }); }
console.log(`first view (painted), median of ${runs}: A (old) ${med(res.A)} ms (${res.A.join(', ')}); B (this checkout) ${med(res.B)} ms (${res.B.join(', ')}); B/A ${(med(res.B) / med(res.A)).toFixed(2)}`);
for (const [what, r] of [['expand model.layers', big], ['then expand model.layers.7', one]])
  if (r.A.length && r.B.length) console.log(`${what}, median of ${r.A.length}: A (old) ${med(r.A)} ms (${r.A.join(', ')}); B (this checkout) ${med(r.B)} ms (${r.B.join(', ')}); B/A ${(med(r.B) / med(r.A)).toFixed(2)}`);
console.log(`load average (1 min) before each load: ${loads.join(' ')}`);
