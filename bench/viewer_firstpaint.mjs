#!/usr/bin/env node
// First-paint and expand benchmark of the viewer in headless chromium on a synthetic IR of
// Llama-shaped layers (default 4200 layers: 67k ops, 100k parameters, 59k modules).
// Prints ROW|figure|ours|baseline|ratio|target|met lines (bench/run.sh protocol).
//   node bench/viewer_firstpaint.mjs [layers]
import { writeFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { buildTemplate, assemble } from '../viewer/build.mjs';
import { synth } from '../viewer/gen-synthetic.mjs';
import { launch } from '../viewer/tests/browser.mjs';

const require = createRequire(import.meta.url);
const layers = Number(process.argv[2] || 4200);
const dir = mkdtempSync(join(tmpdir(), 'cg-viewer-bench-'));
// Plain arrays of objects, as src/viewer/payload.cpp writes them (not the generator's column-
// compressed tables), so the figure is what `candle-graph view` users get.
const payload = synth(layers, false, false);
const nOps = Array.isArray(payload.operations) ? payload.operations.length : payload.operations.rows.length;
const nParams = Array.isArray(payload.parameters) ? payload.parameters.length : payload.parameters.rows.length;
const file = join(dir, 'big.html');
writeFileSync(file, assemble(buildTemplate(), payload));
console.error(`viewer bench: ${nOps} ops, ${nParams} params, ${(statSync(file).size / 1e6).toFixed(1)} MB HTML`);
const { browser, profile } = await launch(require('playwright-core'));
const row = (fig, ours, target, met) => console.log(`ROW|${fig}|${ours.toFixed(0)}|-|-|${target}|${met ? 'yes' : 'NO'}`);
try {
  const first = [], full = [], expandBig = [], expandOne = [];
  for (let run = 0; run < 5; run++) {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.goto('file://' + file, { waitUntil: 'commit' });
    await page.waitForFunction(() => window.__cgDataflowReady !== undefined, null, { timeout: 60000, polling: 20 });
    // First view = navigation start → the dataflow graph laid out, drawn and the page idle.
    first.push(await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r(Math.max(window.__cgDataflowReady, performance.now()))))));
    // All views ready = the deferred tree part (modules, parameters, checkpoint) parsed and indexed
    // too: from then on the architecture view, search and deep links answer without waiting.
    await page.waitForFunction(() => window.cg && cg.marks.tree !== undefined, null, { timeout: 60000, polling: 20 });
    full.push(await page.evaluate(() => cg.marks.tree));
    // Expand: time in the page from the double-click to the relaid-out frame.
    const measure = (id) => page.evaluate((gid) => new Promise((resolve) => {
      const p = cg.screenPos(gid), wrap = document.getElementById('canvas-wrap'), t0 = performance.now();
      wrap.dispatchEvent(new MouseEvent('dblclick', { clientX: p.x, clientY: p.y + 8, bubbles: true }));
      const poll = () => (cg.isExpanded(gid) && cg.pending() === 0 ? requestAnimationFrame(() => resolve(performance.now() - t0)) : setTimeout(poll, 1));
      poll();
    }), id);
    expandBig.push(await measure('g:model.layers'));
    expandOne.push(await measure('g:model.layers.7'));
    await page.close();
  }
  const med = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
  console.error(`viewer bench runs (ms): first ${first.map(Math.round)}; all views ready ${full.map(Math.round)}; expand layers ${expandBig.map(Math.round)}; expand one layer ${expandOne.map(Math.round)}`);
  row(`viewer first view ${Math.round(nOps / 1000)}k ops (ms)`, med(first), '< 2000', med(first) < 2000);
  row('viewer all views ready (ms)', med(full), '-', true);
  row(`viewer expand ${layers}-child group (ms)`, med(expandBig), '< 200', med(expandBig) < 200);
  row('viewer expand one layer group (ms)', med(expandOne), '< 200', med(expandOne) < 200);
} finally { await browser.close(); rmSync(profile, { recursive: true, force: true }); rmSync(dir, { recursive: true, force: true }); }
