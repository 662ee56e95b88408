#!/usr/bin/env node
// Browser test of the viewer in headless Debian chromium (playwright-core, no browser download):
// loads a demo-like report with hostile strings, expands a family and a graph group, searches,
// focuses a finding's node, switches every view, checks the hostile text stayed inert and that
// no network request was made. Screenshots go to OUTDIR.
//   node viewer/tests/browser.mjs OUTDIR
import { mkdirSync, writeFileSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { buildTemplate, assemble } from '../build.mjs';
import { synth } from '../gen-synthetic.mjs';

const require = createRequire(import.meta.url);
export function launch(pw) {
  // playwright's launch() always gives chromium a fresh temporary --user-data-dir (it refuses one
  // passed in args); `profile` is a scratch dir for anything else we write.
  const profile = mkdtempSync(join(tmpdir(), 'cg-chromium-'));
  return pw.chromium.launch({ executablePath: process.env.CG_CHROMIUM || '/usr/bin/chromium', headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run',
      '--disable-component-update', '--disable-sync'] }).then((b) => ({ browser: b, profile }));
}
export function watchNetwork(page, bad) {
  page.on('request', (r) => { const u = r.url(); if (!/^(file|blob|data):/.test(u)) bad.push('network request: ' + u); });
  page.on('pageerror', (e) => bad.push('page error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') bad.push('console error: ' + m.text()); });
}

// Issue 18: no table cell is cut. A cell is cut when its text overflows its box (sideways or, for
// a wrapping cell, downwards) or ends in an ellipsis; a figure (a numeric cell) must also lie
// inside the table's visible width, not past its right edge behind a sideways scroll.
export async function cutCells(page, view) {
  return page.evaluate((v) => {
    const host = document.querySelector('#view-' + v + ' .vtable'), hr = host.getBoundingClientRect(), out = [];
    host.querySelectorAll('.vhead > div, .vrow > div').forEach((d) => {
      const t = d.textContent, r = d.getBoundingClientRect();
      if (d.scrollWidth > d.clientWidth + 0.5) out.push(`overflows sideways (${d.scrollWidth} > ${d.clientWidth}): ${t}`);
      else if (d.scrollHeight > d.clientHeight + 0.5) out.push(`overflows downwards (${d.scrollHeight} > ${d.clientHeight}): ${t}`);
      else if (/…$/.test(t.trim())) out.push('ends in an ellipsis: ' + t);
      else if (d.classList.contains('num') && t && r.right > hr.left + host.clientWidth + 0.5) out.push('figure off the visible width: ' + t);
    });
    return { cells: host.querySelectorAll('.vrow > div').length, cut: out };
  }, view);
}

// Issue 18: nothing in the inspector is cut: no element's text overflows its box, ends in an
// ellipsis or lies past the inspector's right edge.
export async function inspectorCut(page) {
  return page.evaluate(() => {
    const insp = document.getElementById('inspector'), ir = insp.getBoundingClientRect(), out = [];
    insp.querySelectorAll('*').forEach((d) => {
      if (d.children.length) return;
      const t = d.textContent, r = d.getBoundingClientRect();
      if (!t.trim() || !r.width) return;
      if (d.scrollWidth > d.clientWidth + 0.5 && getComputedStyle(d).overflowX !== 'visible') out.push('overflows: ' + t);
      else if (/…$/.test(t.trim())) out.push('ends in an ellipsis: ' + t);
      else if (r.right > ir.right + 0.5) out.push('past the right edge: ' + t);
    });
    return out;
  });
}

// Issue 18: edge labels never overlap one another or a box. At 100 % zoom, every label the page
// placed (drawn in this frame or not) and every closed box, as the page reports them in page
// pixels: no two labels intersect, no label covers a box; most labels are shown (dropping them
// all would be no fix), and some are drawn in the current frame.
export async function labelOverlaps(page) {
  await page.focus('#canvas-wrap'); await page.keyboard.press('0');
  // Labels follow their frame in a task of their own.
  await page.waitForFunction(() => cg.labels().zoom === 1 && cg.labels().labels.length > 0, null, { timeout: 5000 });
  const r = await page.evaluate(() => ({ all: cg.labels(true), drawn: cg.labels(false).labels.length }));
  const hit = (a, b) => a.x < b.x + b.w - 0.5 && b.x < a.x + a.w - 0.5 && a.y < b.y + b.h - 0.5 && b.y < a.y + a.h - 0.5;
  const L = r.all.labels, bad = [];
  for (let i = 0; i < L.length; i++) {
    for (let j = i + 1; j < L.length; j++) if (hit(L[i], L[j])) bad.push(`"${L[i].text}" overlaps "${L[j].text}" at ${Math.round(L[i].x)},${Math.round(L[i].y)}`);
    for (const b of r.all.boxes) if (hit(L[i], b)) bad.push(`"${L[i].text}" covers ${b.id}`);
  }
  return { labelled: r.all.labelled, placed: L.length, drawn: r.drawn, bad };
}

// Issue 35: the time one module instance shows in each view, as a user reads it: its row's Time
// in the Architecture tree (expanded, scrolled to the row), its row's Total in the Profile view's
// module scopes, `total time` in the Dataflow inspector with the instance's box selected, and
// the time the heat overlay colours that box by (with its colour: null is grey).
// The time shown in a virtualised table's row for `path` (scrolled to it; null: no such row): the
// Architecture tree's Time cell (`tree`), the Profile module scopes' Total cell (`profile`).
async function rowText(page, host, path, kind) {
  return page.evaluate(async ([sel, p, k]) => {
    const scroller = document.querySelector(sel);
    scroller.scrollTop = 0;
    for (let i = 0; i < 1000; i++) {
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      for (const row of scroller.querySelectorAll('.vrow')) {
        if (k === 'tree' && [...row.children].some((d) => d.textContent === p)) {
          const bar = row.querySelector('.bar.heat');
          return bar ? bar.parentElement.textContent : '';
        }
        if (k === 'profile' && row.firstElementChild && row.firstElementChild.title === p) return row.children[3].textContent;
      }
      if (scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - 1) break;
      scroller.scrollTop += Math.max(50, scroller.clientHeight - 40);
    }
    return null;
  }, [host, path, kind]);
}

export async function timeEverywhere(page, path) {
  await page.click('#tab-architecture');
  await page.waitForSelector('#arch-tree .vrow');
  await page.click('#arch-expand');
  const arch = await rowText(page, '#arch-tree', path, 'tree');
  await page.click('#tab-profile');
  const profile = await rowText(page, '#pr-table', path, 'profile');
  const id = 'g:' + path;
  await page.evaluate((i) => { location.hash = '#view=dataflow&sel=' + encodeURIComponent(i); }, id);
  await page.waitForFunction((i) => cg.state.sel === i && cg.node(i) && cg.node(i).drawn && !cg.pending(), id, { timeout: 20000 });
  const m = /total.time([0-9.,]+ [µmn]?s)/.exec(await page.textContent('#insp-body'));
  if (await page.getAttribute('#df-heat', 'aria-pressed') !== 'true') await page.click('#df-heat');
  const heat = await page.evaluate((i) => cg.heat(i), id);
  return { arch, profile, dataflow: m ? m[1] : null, heat };
}

async function main() {
  const out = process.argv[2] || 'viewer-screenshots';
  mkdirSync(out, { recursive: true });
  const pw = require('playwright-core');
  const tpl = buildTemplate();
  const html = assemble(tpl, synth(3, true));
  const file = join(out, 'demo-xss.html'); writeFileSync(file, html);
  const { browser, profile } = await launch(pw);
  const failures = [];
  const check = (ok, what) => { console.log((ok ? 'ok   ' : 'FAIL ') + what); if (!ok) failures.push(what); };
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const bad = []; watchNetwork(page, bad);
    await page.goto('file://' + file);
    await page.waitForFunction(() => window.cg && window.__cgDataflowReady !== undefined, null, { timeout: 10000 });
    check(await page.evaluate(() => cg.state.view) === 'dataflow', 'opens on the dataflow view');
    await page.screenshot({ path: join(out, '01-dataflow.png') });
    // Expand the group model.layers in the graph by double-clicking it.
    const pos = await page.evaluate(() => cg.screenPos('g:model.layers.0') || cg.screenPos('g:model.layers'));
    check(!!pos, 'a layer group is drawn on the first view');
    const target = await page.evaluate(() => cg.screenPos('g:model.layers.0') ? 'g:model.layers.0' : 'g:model.layers');
    await page.mouse.dblclick(pos.x, pos.y + 8);
    await page.waitForFunction((id) => cg.isExpanded(id) && cg.pending() === 0, target, { timeout: 5000 });
    check(await page.evaluate((id) => cg.isExpanded(id), target), 'double-click expands ' + target);
    await page.screenshot({ path: join(out, '02-expanded.png') });
    // Save PNG downloads the drawn graph (a blob: URL, no request).
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#df-png')]);
    const png = readFileSync(await dl.path());
    check(dl.suggestedFilename().endsWith('-dataflow.png') && png.subarray(1, 4).toString() === 'PNG' && png.length > 2000,
      'Save PNG downloads the graph as an image (' + png.length + ' bytes)');
    // Expand all opens every group of a small graph: every operation is then drawn.
    await page.click('#df-expand');
    await page.waitForFunction(() => cg.pending() === 0 && cg.groups().every((g) => cg.isExpanded(g)), null, { timeout: 10000 });
    const shown = await page.evaluate(() => ({ vis: cg.visible(), groups: cg.groups().length }));
    check(shown.vis >= 51 + shown.groups - 1, `Expand all draws every operation and group (${shown.vis} boxes)`);
    await page.screenshot({ path: join(out, '02b-expand-all.png') });
    // The whole graph no longer fits: the overview appears, and a click on it moves the view.
    const mm = await page.locator('#minimap').boundingBox();
    check(mm !== null && await page.isVisible('#minimap'), 'the overview map is shown when the graph does not fit');
    if (mm) {
      const before = await page.evaluate(() => cg.screenPos('g:model.layers.2'));
      await page.mouse.click(mm.x + mm.width / 2, mm.y + mm.height - 4);
      const after = await page.evaluate(() => cg.screenPos('g:model.layers.2'));
      check(before && after && after.y < before.y, 'clicking the overview near the bottom scrolls the graph up');
    }
    // Architecture: the repeated family is folded and expands to one instance.
    await page.click('#tab-architecture');
    const famRow = page.locator('#arch-tree .vrow', { hasText: '{i} × 3' });
    check(await famRow.count() === 1, 'architecture folds model.layers.{i} × 3');
    await famRow.click();
    check(await page.locator('#arch-tree .vrow', { hasText: 'instance 0 of 3' }).count() === 1, 'family expands to one instance');
    await page.screenshot({ path: join(out, '03-architecture.png') });
    // Search with next/previous and a match count.
    await page.fill('#q', 'q_proj');
    await page.waitForFunction(() => /\/ \d/.test(document.getElementById('q-count').textContent));
    const cnt = await page.textContent('#q-count');
    check(/^0 \/ \d+$/.test(cnt) && Number(cnt.split('/ ')[1]) >= 6, 'search counts matches: ' + cnt);
    await page.press('#q', 'Enter'); await page.press('#q', 'Enter');
    check((await page.textContent('#q-count')).startsWith('2 /'), 'Enter steps to the next match');
    await page.click('#q-prev');
    check((await page.textContent('#q-count')).startsWith('1 /'), 'previous-match button steps back');
    await page.fill('#q', ''); await page.press('#q', 'Escape');
    // Findings: selecting one focuses its node in the graph.
    await page.click('#tab-findings');
    await page.screenshot({ path: join(out, '04-findings.png') });
    const want = await page.evaluate(() => JSON.parse(document.getElementById('cg-payload').textContent).findings.find((f) => f.id === 'F1').related[0]);
    await page.locator('#fi-table .vrow[data-key="F1"]').click();
    await page.waitForFunction((id) => cg.state.view === 'dataflow' && cg.state.sel === id && cg.pending() === 0 && cg.screenPos(id), want, { timeout: 5000 });
    const p = await page.evaluate((id) => cg.screenPos(id), want);
    const box = await page.locator('#canvas-wrap').boundingBox();
    check(p && Math.abs(p.x - (box.x + box.width / 2)) < box.width / 4 && Math.abs(p.y - (box.y + box.height / 2)) < box.height / 3, 'finding F1 focuses and centres op ' + want);
    check((await page.textContent('#insp-title')).startsWith('finding'), 'inspector shows the selected finding');
    check((await page.evaluate(() => location.hash)).includes('sel=' + want), 'URL hash deep-links the selection');
    await page.screenshot({ path: join(out, '05-focused.png') });
    const focusedUrl = page.url();
    // Clicking an edge inspects its tensor (shape/dtype, producer and consumers).
    const edgeAt = await page.evaluate((id) => { const t = JSON.parse(document.getElementById('cg-payload').textContent).operations.find((o) => o.id === id).outputs[0]; return t; }, want);
    check(await page.evaluate(() => typeof cg.edgeScreenPos === 'function'), 'edge hook present');
    const ep = await page.evaluate((t) => cg.edgeScreenPos(t), edgeAt);
    if (ep) { await page.mouse.click(ep.x, ep.y); await page.waitForTimeout(100); }
    check(!!ep && (await page.textContent('#insp-title')).startsWith('tensor'), 'clicking an edge inspects its tensor');
    await page.click('#df-heat');
    await page.screenshot({ path: join(out, '06-heat.png') });
    for (const v of ['checkpoint', 'profile']) {
      await page.click('#tab-' + v);
      check(await page.locator('#view-' + v).isVisible(), 'switches to the ' + v + ' view');
      check(await page.locator('#view-' + v + ' .vrow').count() > 0, v + ' table has rows');
      await page.screenshot({ path: join(out, `07-${v}.png`) });
    }
    await page.click('#theme');
    await page.click('#tab-dataflow');
    await page.screenshot({ path: join(out, '08-dark.png') });
    // Deep link: a fresh page opened on the hash lands on the same selection.
    const url = focusedUrl;
    const page2 = await browser.newPage({ viewport: { width: 1200, height: 800 } }); watchNetwork(page2, bad);
    await page2.goto(url);
    await page2.waitForFunction((id) => window.cg && cg.state.sel === id, want, { timeout: 10000 });
    check(true, 'deep link restores the selection');
    // The compressed payload form (used for big models) loads to the same state.
    const gzFile = join(out, 'demo-gz.html'); writeFileSync(gzFile, assemble(tpl, synth(3, true), { gzipAbove: 0 }));
    const page3 = await browser.newPage({ viewport: { width: 1200, height: 800 } }); watchNetwork(page3, bad);
    await page3.goto('file://' + gzFile + '#view=findings');
    await page3.waitForFunction(() => window.cg && cg.state.view === 'findings' && document.querySelectorAll('#fi-table .vrow').length === 3, null, { timeout: 10000 });
    check(await page3.evaluate(() => document.getElementById('cg-payload').textContent === '' && window.__pwned === undefined), 'gzip+base64 payload loads (findings deep link) and stays inert');
    // A big open group (issue 19): on a 300-layer report with model.layers open and the view in
    // its middle, the group's dashed border is drawn down both sides of the view (only that part
    // is drawn), the edges between the layers in view are drawn, and the overview map follows
    // both the layout (another layer opened) and the view (a pan).
    {
      const bigFile = join(out, 'big-group.html'); writeFileSync(bigFile, assemble(tpl, synth(300, false, false)));
      const pb = await browser.newPage({ viewport: { width: 1280, height: 800 } }); watchNetwork(pb, bad);
      await pb.goto('file://' + bigFile);
      await pb.waitForFunction(() => window.cg && cg.marks.tree !== undefined && cg.screenPos('g:model.layers'), null, { timeout: 30000 });
      const dbl = (id) => pb.evaluate((gid) => new Promise((resolve) => {
        const p = cg.screenPos(gid), wrap = document.getElementById('canvas-wrap');
        wrap.dispatchEvent(new MouseEvent('dblclick', { clientX: p.x, clientY: p.y + 8, bubbles: true }));
        const poll = () => (cg.isExpanded(gid) && cg.pending() === 0 ? requestAnimationFrame(() => resolve(true)) : setTimeout(poll, 5));
        poll();
      }), id);
      await dbl('g:model.layers');
      await pb.evaluate(() => { location.hash = '#view=dataflow&sel=g%3Amodel.layers.150'; });
      await pb.waitForFunction(() => cg.state.sel === 'g:model.layers.150', null, { timeout: 10000 });
      await pb.waitForTimeout(100);
      // Pixels of the graph canvas down a column (page x), over the view's height, that are not
      // the group's fill: the dashed border covers 5 of every 9 units.
      const column = (x) => pb.evaluate((px) => {
        const cv = document.getElementById('graph'), r = cv.getBoundingClientRect(), d = window.devicePixelRatio || 1;
        const cx = Math.round((px - r.left) * d), h = cv.height, data = cv.getContext('2d').getImageData(cx - 1, 0, 3, h).data;
        let ink = 0;
        for (let y = 0; y < h; y++) { let best = 0; for (let k = 0; k < 3; k++) { const i = (y * 3 + k) * 4; best = Math.max(best, 765 - data[i] - data[i + 1] - data[i + 2]); } if (best > 150) ink++; }
        return ink / h;
      }, x);
      const gb = await pb.evaluate(() => ({ b: cg.box('g:model.layers'), wrap: document.getElementById('canvas-wrap').getBoundingClientRect().toJSON() }));
      check(gb.b && gb.b.open && gb.b.y < gb.wrap.top && gb.b.y + gb.b.h > gb.wrap.bottom, 'the open model.layers group runs past the top and bottom of the view');
      const left = await column(gb.b.x), right = await column(gb.b.x + gb.b.w);
      check(left > 0.3 && left < 0.8 && right > 0.3 && right < 0.8, `its dashed border is drawn down both sides of the view (${(left * 100).toFixed(0)} %, ${(right * 100).toFixed(0)} % inked)`);
      // The edge from layers.149 into layers.150 runs down the middle between the two boxes.
      const e = await pb.evaluate(() => { const a = cg.box('g:model.layers.149'), b = cg.box('g:model.layers.150'); return { x: b.x + b.w / 2, y0: a.y + a.h + 2, y1: b.y - 2 }; });
      const edgeInk = await pb.evaluate(({ x, y0, y1 }) => {
        const cv = document.getElementById('graph'), r = cv.getBoundingClientRect(), d = window.devicePixelRatio || 1;
        const data = cv.getContext('2d').getImageData(Math.round((x - r.left) * d) - 2, Math.round((y0 - r.top) * d), 5, Math.max(1, Math.round((y1 - y0) * d))).data;
        let ink = 0; for (let i = 0; i < data.length; i += 4) if (765 - data[i] - data[i + 1] - data[i + 2] > 150) ink++;
        return ink;
      }, e);
      check(edgeInk > 0, 'the edge layers.149 → layers.150 in view is drawn');
      const mini = () => pb.evaluate(() => { const m = document.getElementById('minimap'); return m.hidden ? null : m.toDataURL(); });
      const m0 = await mini();
      await dbl('g:model.layers.150');
      const m1 = await mini();
      // Switching the theme there and back redraws the map from scratch: it must read the same.
      await pb.click('#theme'); await pb.click('#theme');
      const m1again = await mini();
      await pb.focus('#canvas-wrap'); for (let i = 0; i < 8; i++) await pb.keyboard.press('ArrowUp');
      const m2 = await mini();
      check(m0 && m1 && m2 && m0 !== m1 && m1 === m1again && m1 !== m2, 'the overview map follows a layout change and a pan');
      await pb.screenshot({ path: join(out, '02c-big-open-group.png') });
      await pb.close();
    }
    // Hostile or broken deep links are ignored, never a blank page: an unknown view, a view named
    // like an Object.prototype member, a query that does not percent-decode (issue 22).
    for (const h of ['#view=foo', '#view=__proto__', '#view=constructor', '#q=%E0%A4%A', '#__proto__=x&sel=%ZZ&view=findings']) {
      const errs = [];
      const pg = await browser.newPage({ viewport: { width: 1000, height: 700 } }); watchNetwork(pg, errs);
      await pg.goto('file://' + file + h);
      const ok = await pg.waitForFunction(() => window.cg && cg.state.view && !document.getElementById('view-' + cg.state.view).hidden, null, { timeout: 10000 }).then(() => true, () => false);
      const v = ok ? await pg.evaluate(() => cg.state.view) : '(blank page)';
      check(ok && ['architecture', 'dataflow', 'findings'].includes(v) && errs.length === 0,
        `deep link ${h} is ignored where invalid and shows a view (${v})` + (errs.length ? ': ' + errs.join('; ') : ''));
      if (ok) {  // the same hashes arriving later, by hashchange
        await pg.evaluate(() => { location.hash = '#view=__proto__'; });
        await pg.evaluate(() => { location.hash = '#q=%E0%A4%A&view=nope'; });
        await pg.waitForTimeout(100);
        const after = await pg.evaluate(() => cg.state.view);
        check(errs.length === 0 && !!after && !(/__proto__|nope/.test(after)), `hashchange to invalid parts keeps the page (${after})` + (errs.length ? ': ' + errs.join('; ') : ''));
      }
      await pg.close();
    }
    // The demo's own report, written by `candle-graph view` from the analyzed example crate (the
    // two-part page the C++ side emits), opens, draws its graph and answers in every view.
    if (process.env.CG_DEMO_HTML) {
      const page4 = await browser.newPage({ viewport: { width: 1440, height: 900 } }); watchNetwork(page4, bad);
      await page4.goto('file://' + process.env.CG_DEMO_HTML);
      await page4.waitForFunction(() => window.cg && window.__cgDataflowReady !== undefined, null, { timeout: 20000 });
      const d = await page4.evaluate(() => ({ view: cg.state.view, visible: cg.visible(), tree: document.getElementById('cg-payload-tree').textContent.length }));
      check(d.view === 'dataflow' && d.visible > 1, `demo report opens on a drawn dataflow graph (${d.visible} boxes)`);
      check(d.tree > 0, 'demo report carries its module tree as the deferred payload part');
      const props = await page4.textContent('#insp-body');
      check(/candle-nn/.test(props) && /operations/.test(props) && /^Model · /.test(await page4.textContent('#insp-title')),
        'with nothing selected the inspector shows the model\'s properties (features, candle versions, counts)');
      // Issue 38: the model's memory at the config's context (tiny-llama: 1,024 positions, batch
      // 1, F32): KV cache 2 (k, v) x 4 layers x 4 kv heads x 1,024 x 32 x 4 B = 4.00 MiB; weights
      // 3,950,848 x 4 B = 15.07 MiB.
      check(/Memory/.test(props) && /KV cache\s*4\.00 MiB/.test(props) && /weights\s*15\.07 MiB/.test(props) && /context 1,024/.test(props),
        'the model\'s properties give its memory at the config\'s context (weights 15.07 MiB, KV cache 4.00 MiB)');
      // Edge labels on tiny-llama with every group open: q, k and v projections read one input.
      await page4.click('#df-expand');
      await page4.waitForFunction(() => cg.pending() === 0 && cg.groups().every((g) => cg.isExpanded(g)), null, { timeout: 10000 });
      const dl = await labelOverlaps(page4);
      check(dl.bad.length === 0 && dl.labelled > 20 && dl.placed >= 0.8 * dl.labelled && dl.drawn > 0,
        `demo with every group open, at 100 %: no edge label overlaps another label or a box (${dl.placed} of ${dl.labelled} labels placed, ${dl.drawn} in view)` + (dl.bad.length ? ': ' + dl.bad.slice(0, 4).join(' | ') : ''));
      await page4.screenshot({ path: join(out, '09b-demo-labels.png') });
      // Issue 37: edges inside the unrolled layers read in the model forward's dimensions
      // (`seq_len`, the bound 256), never the attention helper's own `[b, t, hidden]`.
      const texts = await page4.evaluate(() => cg.labels(true).labels.map((l) => l.text));
      const helperNames = texts.filter((t) => /\bhidden\b/.test(t));
      check(helperNames.length === 0 && texts.filter((t) => /\[b, seq_len, 256\]/.test(t)).length >= 8,
        `demo edge labels speak the forward's dimensions (${texts.filter((t) => /seq_len/.test(t)).length} of ${texts.length} name seq_len)` + (helperNames.length ? ': ' + helperNames.slice(0, 4).join(' | ') : ''));
      await page4.click('#tab-architecture');
      check(await page4.locator('#arch-tree .vrow', { hasText: '× 4' }).count() === 1, 'demo architecture folds the 4 decoder layers');
      await page4.fill('#q', 'q_proj');
      await page4.waitForFunction(() => /\/ \d|no match/.test(document.getElementById('q-count').textContent));
      check(/^0 \/ [1-9]/.test(await page4.textContent('#q-count')), 'demo search finds q_proj');
      await page4.press('#q', 'Enter');
      await page4.waitForFunction(() => cg.state.sel != null, null, { timeout: 5000 });
      check(await page4.evaluate(() => /q_proj/.test(document.getElementById('insp-title').textContent)), 'demo search result is shown in the inspector');
      // A layer's attention shows the cache it keeps: 2 x [1, 4, 1024, 32] x 4 B = 1.00 MiB per
      // instance, 4 instances.
      await page4.fill('#q', 'layers.2.self_attn attention');  // the module's prefix and type: it alone
      await page4.waitForFunction(() => document.getElementById('q-count').textContent === '0 / 1');
      await page4.press('#q', 'Enter');
      await page4.waitForFunction(() => /self_attn/.test(document.getElementById('insp-title').textContent), null, { timeout: 5000 });
      const attn = await page4.textContent('#insp-body');
      check(/KV cache kept across calls/.test(attn) && /per_instance\s*1\.00 MiB/.test(attn) && /all_instances\s*4\.00 MiB/.test(attn) && /\[1, 4, 1024, 32\]/.test(attn),
        'a decoder layer\'s attention shows the KV cache it keeps (1.00 MiB per instance, 4 instances): ' + attn.slice(-400));
      await page4.screenshot({ path: join(out, '10-demo-architecture.png') });
      await page4.click('#tab-checkpoint');
      const chips = await page4.$$eval('#ck-chips button', (bs) => bs.map((b) => b.textContent));
      check(['missing 1', 'unclaimed 1', 'shape mismatch 1'].every((c) => chips.includes(c)) && chips.some((c) => /^matched [1-9]/.test(c)),
        'demo checkpoint view counts matched, missing, unclaimed and mismatched: ' + chips.join(', '));
      await page4.locator('#ck-table .vrow', { hasText: 'rotary_emb.inv_freq' }).click();
      check(/checkpoint entry/.test(await page4.textContent('#insp-title')), 'a checkpoint row opens in the inspector');
      await page4.screenshot({ path: join(out, '11-demo-checkpoint.png') });
    }
    // Issue 16: module scope timings in the Architecture tree: a Time column with a heat bar per
    // timed module; a folded family sums its instances; nothing cut at 1280 px.
    if (process.env.CG_TIMED_HTML) {
      const pt = await browser.newPage({ viewport: { width: 1280, height: 900 } }); watchNetwork(pt, bad);
      await pt.goto('file://' + process.env.CG_TIMED_HTML);
      await pt.waitForFunction(() => window.cg && window.__cgDataflowReady !== undefined, null, { timeout: 20000 });
      await pt.click('#tab-architecture');
      await pt.waitForSelector('#arch-tree .vrow');
      const head = await pt.$$eval('#arch-tree .vhead > div', (ds) => ds.map((d) => d.textContent));
      check(head.includes('Time'), 'timed report: the Architecture tree has a Time column: ' + head.join(', '));
      const fam = pt.locator('#arch-tree .vrow', { hasText: '× 4' });
      const famText = await fam.textContent();
      check(/1\.90 ms/.test(famText) && (await fam.locator('.bar.heat').count()) === 1,
        'the folded layer family shows the sum of its timed instances (0.9 + 1.0 ms) with a heat bar: ' + famText);
      const r = await cutCells(pt, 'architecture');
      check(r.cut.length === 0, 'timed Architecture tree at 1280 px: no cut cell' + (r.cut.length ? ': ' + r.cut.slice(0, 5).join(' | ') : ''));
      // Expanded, the family row (1.90 ms, the sum of its instances) outweighs every module: its
      // heat bar stays within the column, which still fits its figure.
      await pt.click('#arch-expand');
      const rx = await cutCells(pt, 'architecture');
      check(rx.cut.length === 0, 'timed Architecture tree expanded at 1280 px: no cut cell' + (rx.cut.length ? ': ' + rx.cut.slice(0, 5).join(' | ') : ''));
      await pt.screenshot({ path: join(out, '12-timed-architecture.png') });
      await pt.click('#tab-profile');
      // Issue 35: the Profile view opens on the module scopes, in their hierarchy: `model` and
      // `model.layers`, which have no scope of their own, are untimed rows above the layers.
      check(await pt.$eval('#pr-mode', (e) => e.value) === 'scopes', 'the Profile view opens on the module scopes');
      const order = await pt.$$eval('#pr-table .vrow > div:first-child', (ds) => ds.map((d) => d.title));
      const at = (p) => order.indexOf(p);
      check(at('model.layers (no scope of its own)') >= 0 && at('model.layers (no scope of its own)') < at('model.layers.0') &&
        at('model.layers.0') < at('model.layers.0.self_attn') && at('model.layers.0.mlp') < at('model.layers.1'),
        'the module scopes are a tree, each row under its parent: ' + order.join(', '));
      const parent = await pt.locator('#pr-table .vrow').filter({ has: pt.locator('div[title="model.layers (no scope of its own)"]') }).textContent();
      check(/—/.test(parent) && !/µs/.test(parent), 'an ancestor with no scope shows no time: ' + parent);
      const attn = await pt.locator('#pr-table .vrow', { hasText: 'self_attn' }).textContent();
      check(/400\.0 µs/.test(attn), 'the Profile view lists module scopes with self and total time: ' + attn);
      // model.layers.0: 900 µs total, 200 µs self (less self_attn and mlp).
      const layer0 = await pt.locator('#pr-table .vrow').filter({ hasText: '900.0 µs' }).textContent();
      check(/200\.0 µs/.test(layer0), 'a module scope\'s self time excludes its child scopes: ' + layer0);
      check(/host-side timing/.test(await pt.textContent('#pr-stat')), 'the Profile view says the timings are host-side');
      // Timings keyed by instance path land on that instance's box in the unrolled graph.
      await pt.click('#tab-dataflow');
      const l0 = await pt.evaluate(() => cg.node('g:model.layers.0'));
      check(l0 && l0.ns === 900000, 'the module scope timing of model.layers.0 lands on its instance box: ' + JSON.stringify(l0));
      const rp = await cutCells(pt, 'profile');
      check(rp.cut.length === 0, 'timed Profile view at 1280 px: no cut cell' + (rp.cut.length ? ': ' + rp.cut.slice(0, 5).join(' | ') : ''));
    }
    // Issue 39: numeric health in the Architecture tree. A NaN injected after model.layers.2.mlp
    // at step 1 spreads to every later module: the folded family is red from step 1; opened, layer
    // 2's MLP carries the "first non-finite" flag, layers 0 and 1 (before it) stay green.
    if (process.env.CG_HEALTH_HTML) {
      const ph = await browser.newPage({ viewport: { width: 1280, height: 900 } }); watchNetwork(ph, bad);
      await ph.goto('file://' + process.env.CG_HEALTH_HTML);
      await ph.waitForFunction(() => window.cg && window.__cgDataflowReady !== undefined, null, { timeout: 20000 });
      await ph.click('#tab-architecture');
      await ph.waitForSelector('#arch-tree .vrow');
      const head = await ph.$$eval('#arch-tree .vhead > div', (ds) => ds.map((d) => d.textContent));
      check(head.includes('Health'), 'a report with statistics has a Health column: ' + head.join(', '));
      const fam = await ph.locator('#arch-tree .vrow', { hasText: '× 4' }).textContent();
      check(/NaN\/Inf @1/.test(fam), 'the folded layer family shows the non-finite output from step 1: ' + fam);
      // Opened on the first non-finite module (the payload names it, as `query first-non-finite` does).
      const first = await ph.evaluate(() => JSON.parse(document.getElementById('cg-payload').textContent).runtime.first_non_finite);
      check(first && first.path === 'model.layers.2.mlp' && first.step === 1, 'the report names model.layers.2.mlp at step 1 the first non-finite: ' + JSON.stringify(first));
      await ph.evaluate((id) => { location.hash = '#view=architecture&sel=' + encodeURIComponent(id); }, first.module);
      await ph.waitForFunction(() => /first non-finite/.test(document.getElementById('arch-tree').textContent), null, { timeout: 5000 }).catch(() => {});
      const rows = await ph.$$eval('#arch-tree .vrow', (rs) => rs.map((r) => ({ t: r.textContent, dot: (r.querySelector('.dot') || {}).className || '' })));
      const flagged = rows.filter((r) => /first non-finite/.test(r.t));
      check(flagged.length === 1 && /model\.layers\.2\.mlp$/.test(flagged[0].t) && /NaN\/Inf @1/.test(flagged[0].t) && /bad/.test(flagged[0].dot),
        'exactly one row, layer 2\'s MLP, is flagged the first non-finite (red, from step 1): ' + JSON.stringify(flagged));
      // The inspector of the selected module (layer 2's MLP) says so too.
      const insp = await ph.textContent('#insp-body');
      check(/Numeric health/.test(insp) && /first_non_finite_step\s*1/.test(insp) && /the first module whose output went non-finite/.test(insp),
        'the inspector shows the module\'s numeric health: ' + insp.slice(insp.indexOf('Numeric health'), insp.indexOf('Numeric health') + 200));
      // Layer 0's MLP ran before the NaN at step 1: finite then, non-finite from step 2 (the NaN
      // stays in the activations) and not flagged.
      await ph.evaluate((id) => { location.hash = '#view=architecture&sel=' + encodeURIComponent(id); }, first.module.replace('layers.2.mlp', 'layers.0.mlp'));
      await ph.waitForFunction(() => /model\.layers\.0\.mlp/.test(document.getElementById('arch-tree').textContent), null, { timeout: 5000 }).catch(() => {});
      const mlp0 = (await ph.$$eval('#arch-tree .vrow', (rs) => rs.map((r) => r.textContent))).find((t) => /model\.layers\.0\.mlp$/.test(t));
      check(mlp0 && /NaN\/Inf @2/.test(mlp0) && !/first non-finite/.test(mlp0), 'layer 0 MLP, before the NaN, goes non-finite a step later and is not flagged: ' + mlp0);
      const rh = await cutCells(ph, 'architecture');
      check(rh.cut.length === 0, 'health Architecture tree at 1280 px: no cut cell' + (rh.cut.length ? ': ' + rh.cut.slice(0, 5).join(' | ') : ''));
      await ph.screenshot({ path: join(out, '17-health-architecture.png') });
    }
    // Issue 18: the per-instance graph on a real unrolled model (tiny-llama under the 8B-sized
    // config: 32 decoder layers), written by `candle-graph view`.
    if (process.env.CG_BIG_HTML) {
      const pi = await browser.newPage({ viewport: { width: 1440, height: 900 } }); watchNetwork(pi, bad);
      await pi.goto('file://' + process.env.CG_BIG_HTML);
      await pi.waitForFunction(() => window.cg && window.__cgDataflowReady !== undefined && !cg.pending(), null, { timeout: 20000 });
      const fam = await pi.evaluate(() => cg.node('g:model.layers'));
      check(fam && fam.name === 'layers.{i} × 32' && !(await pi.evaluate(() => cg.isExpanded('g:model.layers'))),
        'the 32 decoder layers open folded as one family box: ' + JSON.stringify(fam));
      check(/ops \(\d+ call sites in \d+ module instance calls\)/.test(await pi.textContent('#df-stat')), 'the graph is the main forward unrolled into module instance calls: ' + await pi.textContent('#df-stat'));
      const fp = await pi.evaluate(() => cg.screenPos('g:model.layers'));
      await pi.mouse.dblclick(fp.x, fp.y);
      await pi.waitForFunction(() => cg.isExpanded('g:model.layers') && cg.isExpanded('g:model.layers.0') && !cg.pending(), null, { timeout: 10000 });
      const one = await pi.evaluate(() => ({ l1: cg.isExpanded('g:model.layers.1'), l31: !!cg.node('g:model.layers.31'), edges: cg.edgesOf('g:model.layers').map((e) => e.join('>')) }));
      check(!one.l1 && one.l31, 'double-clicking the family opens the first instance, the other 31 stay folded boxes');
      check(one.edges.includes('g:model.layers.0>g:model.layers.1') && one.edges.includes('g:model.layers.30>g:model.layers.31'),
        'edges run between consecutive instances (layers.0 → layers.1 … layers.30 → layers.31): ' + one.edges.length + ' edges');
      await pi.screenshot({ path: join(out, '15-instances-one.png') });
      await pi.evaluate(() => { location.hash = '#view=dataflow&sel=g%3Amodel.layers'; });
      await pi.waitForSelector('#fam-one');
      await pi.fill('#fam-k', '5'); await pi.click('#fam-one');
      await pi.waitForFunction(() => cg.isExpanded('g:model.layers.5') && !cg.pending(), null, { timeout: 10000 });
      check(await pi.evaluate(() => cg.state.sel === 'g:model.layers.5' && !cg.isExpanded('g:model.layers.4')), 'the inspector opens one chosen instance (layers.5) and selects it');
      await pi.evaluate(() => { location.hash = '#view=dataflow&sel=g%3Amodel.layers'; });
      await pi.waitForSelector('#fam-all'); await pi.click('#fam-all');
      await pi.waitForFunction(() => cg.isExpanded('g:model.layers.31') && !cg.pending(), null, { timeout: 20000 });
      const all = await pi.evaluate(() => { const ids = []; for (let k = 0; k < 32; k++) ids.push('g:model.layers.' + k + '.self_attn'); return { open: ids.every((i) => cg.isExpanded(i)), visible: cg.visible() }; });
      check(all.open && all.visible > 32 * 20, `"Open all" expands every instance with its submodules (${all.visible} boxes drawn)`);
      await pi.screenshot({ path: join(out, '16-instances-all.png') });
      // Found by instance path and by static id: both land on a drawn node of that instance.
      const q = await pi.evaluate(() => cg.node('model.layers.7.self_attn.q_proj'));
      check(q && q.kind === 'group' && q.id === 'g:model.layers.7.self_attn.q_proj', 'an instance path names its module instance box: ' + JSON.stringify(q));
      const qop = await pi.evaluate(() => cg.opsOf('g:model.layers.7.self_attn.q_proj')[0]);
      check(qop && qop.static && qop.instance === 'model.layers.7.self_attn.q_proj' && qop.id === qop.static + '@' + qop.instance,
        'an instance\'s operation keeps its static id beside the instance path: ' + JSON.stringify(qop));
      await pi.evaluate((id) => { location.hash = '#view=dataflow&sel=' + encodeURIComponent(id); }, qop.id);
      await pi.waitForFunction((id) => cg.state.sel === id && cg.node(id).drawn, qop.id, { timeout: 10000 });
      check(true, 'a deep link to `<static id>@<instance path>` selects that instance\'s node');
      await pi.evaluate((id) => { location.hash = '#view=dataflow&sel=' + encodeURIComponent(id); }, qop.static);
      await pi.waitForFunction((s) => cg.state.sel && cg.state.sel.indexOf(s + '@') === 0, qop.static, { timeout: 10000 });
      const bySid = await pi.evaluate(() => cg.node(cg.state.sel));
      check(bySid.static === qop.static && bySid.drawn, 'a deep link to the static op id selects a drawn instance of it: ' + bySid.id);
      await pi.close();
    }
    // Issue 35: one module instance shows one time in every view. CG_TIMED_HTML: module scopes
    // only; CG_SCOPED_HTML: module scopes and operation timings of the same instances (as the
    // demo's profile-demo trace has): q_proj's matmul timing (30 + 40 µs over its two instances)
    // lies inside the scopes and must not be added to either instance's time.
    // The Architecture tree lists a folded family's first instance (layers.0) with its submodules,
    // the others in the family's sum: layers.1 has no row of its own there. The heat overlay
    // scales by the slowest scope (model.layers.1, 1 ms): a slower box is a warmer colour.
    for (const [env, want] of [['CG_TIMED_HTML', [['model.layers.0.self_attn', '400.0 µs', 400000], ['model.layers.0', '900.0 µs', 900000]]],
      ['CG_SCOPED_HTML', [['model.layers.0.self_attn.q_proj', '50.0 µs', 50000], ['model.layers.0.self_attn', '400.0 µs', 400000],
        ['model.layers.1.self_attn.q_proj', '70.0 µs', 70000, 'no row'], ['model.layers.1.self_attn', '500.0 µs', 500000, 'no row']]]]) {
      if (!process.env[env]) continue;
      const ps = await browser.newPage({ viewport: { width: 1280, height: 900 } }); watchNetwork(ps, bad);
      await ps.goto('file://' + process.env[env]);
      await ps.waitForFunction(() => window.cg && window.__cgDataflowReady !== undefined, null, { timeout: 20000 });
      const hue = {};
      for (const [path, text, ns, noRow] of want) {
        const t = await timeEverywhere(ps, path);
        hue[path] = t.heat && t.heat.fill ? Number(/hsl\(([0-9.]+)/.exec(t.heat.fill)[1]) : null;
        check((noRow ? t.arch === null : t.arch === text) && t.profile === text && t.dataflow === text && t.heat && t.heat.on && t.heat.ns === ns && hue[path] !== null,
          `${env}: ${path} shows ${text} in ${noRow ? '' : 'the Architecture tree, '}the Profile view, the Dataflow inspector and the heat overlay: ` + JSON.stringify(t));
      }
      if (env === 'CG_SCOPED_HTML') {
        check(hue['model.layers.0.self_attn.q_proj'] > hue['model.layers.1.self_attn.q_proj'] && hue['model.layers.1.self_attn.q_proj'] > hue['model.layers.0.self_attn'] &&
          hue['model.layers.0.self_attn'] > hue['model.layers.1.self_attn'], 'the heat overlay grades the instances by their times (hue falls as time grows): ' + JSON.stringify(hue));
      }
      if (env === 'CG_SCOPED_HTML') await ps.screenshot({ path: join(out, '19-scoped-heat.png') });
      await ps.close();
    }
    // make demo's own report (CG_DEMO_RUN_HTML, where the build has profile-demo): its figures
    // vary from run to run, so each instance must only agree with itself across the views.
    if (process.env.CG_DEMO_RUN_HTML) {
      const pd = await browser.newPage({ viewport: { width: 1280, height: 900 } }); watchNetwork(pd, bad);
      await pd.goto('file://' + process.env.CG_DEMO_RUN_HTML);
      await pd.waitForFunction(() => window.cg && window.__cgDataflowReady !== undefined, null, { timeout: 20000 });
      for (const path of ['model.layers.0.self_attn.q_proj', 'model.layers.0.mlp.down_proj', 'model.layers.0', 'model.embed_tokens', 'model.norm']) {
        const t = await timeEverywhere(pd, path);
        check(t.arch && t.arch === t.profile && t.arch === t.dataflow && t.heat && t.heat.ns > 0 && !!t.heat.fill,
          `make demo's report: ${path} shows one time in the Architecture tree, the Profile view, the Dataflow inspector and the heat overlay: ` + JSON.stringify(t));
      }
      await pd.close();
    }
    // Issue 18 on a real-shaped unrolled model of our own: tests/fixtures/crates/gpt_24 (a GPT-2
    // medium shaped decoder, 24 blocks from its config's serde default), written by
    // `candle-graph view`, at 1280 px.
    if (process.env.CG_GPT24_HTML) {
      const pg = await browser.newPage({ viewport: { width: 1280, height: 900 } }); watchNetwork(pg, bad);
      await pg.goto('file://' + process.env.CG_GPT24_HTML);
      await pg.waitForFunction(() => window.cg && window.__cgDataflowReady !== undefined && !cg.pending(), null, { timeout: 20000 });
      const fam = await pg.evaluate(() => cg.node('g:transformer.h'));
      check(fam && fam.name === 'h.{i} × 24' && fam.drawn && !(await pg.evaluate(() => cg.isExpanded('g:transformer.h'))),
        'gpt-24: the 24 blocks open folded as one family box: ' + JSON.stringify(fam));
      // Unfold: double-click opens the first block, the other 23 are boxes in loop order.
      let fp = await pg.evaluate(() => cg.screenPos('g:transformer.h'));
      await pg.mouse.dblclick(fp.x, fp.y);
      await pg.waitForFunction(() => cg.isExpanded('g:transformer.h') && cg.isExpanded('g:transformer.h.0') && !cg.pending(), null, { timeout: 10000 });
      const st1 = await pg.evaluate(() => { const o = { drawn: [], open: [] }; for (let k = 0; k < 24; k++) { const n = cg.node('g:transformer.h.' + k); if (n && n.drawn) o.drawn.push(k); if (cg.isExpanded('g:transformer.h.' + k)) o.open.push(k); } return o; });
      check(st1.drawn.length === 24 && st1.open.join() === '0', `gpt-24: unfolding draws all 24 blocks with only h.0 open (drawn ${st1.drawn.length}, open ${st1.open})`);
      // Edge continuity: between the family's instances exactly the chain h.0 → h.1 → … → h.23.
      const chain = []; for (let k = 0; k < 23; k++) chain.push(`g:transformer.h.${k}>g:transformer.h.${k + 1}`);
      const famEdges = (await pg.evaluate(() => cg.edgesOf('g:transformer.h'))).map((e) => e.join('>')).sort();
      check(famEdges.join() === chain.slice().sort().join(), `gpt-24: the instances are linked h.0 → h.1 → … → h.23 and nothing else (${famEdges.length} edges)`);
      // Node by node: whatever an instance reads from outside itself is the previous instance's
      // result (one node: its last residual add); h.0 reads the embeddings' sum.
      const U = await pg.evaluate(() => cg.unrolled());
      const inst = (path, k) => path === 'transformer.h.' + k || path.startsWith('transformer.h.' + k + '.');
      const byIdU = new Map(U.map((o) => [o.id, o])), broken = [];
      for (let k = 0; k < 24; k++) {
        const ext = new Set();
        U.filter((o) => inst(o.instance, k)).forEach((o) => o.srcs.forEach((sid) => { const so = byIdU.get(sid); if (so && !inst(so.instance, k)) ext.add(sid); }));
        const from = [...ext].map((sid) => byIdU.get(sid));
        const ok = k === 0 ? from.length === 1 && from[0].instance === '' && /broadcast_add/.test(from[0].id)
          : from.length === 1 && from[0].instance === 'transformer.h.' + (k - 1) && U.some((o) => inst(o.instance, k) && o.srcs.includes(from[0].id));
        if (!ok) broken.push(`h.${k} reads ${[...ext].join(', ') || 'nothing'}`);
      }
      check(broken.length === 0, 'gpt-24: each block\'s input edge comes from the previous block\'s output (h.0 from the embeddings)' + (broken.length ? ': ' + broken.slice(0, 3).join(' | ') : ''));
      // After the loop, ln_f reads the last block's result (through the loop's call site).
      const lnf = U.filter((o) => o.instance === 'transformer.ln_f');
      const reads = (o, depth) => o.srcs.some((sid) => { const so = byIdU.get(sid); return so && (so.instance === 'transformer.h.23' || depth > 0 && so.instance === '' && reads(so, depth - 1)); });
      check(lnf.length > 0 && lnf.every((o) => reads(o, 1)), 'gpt-24: ln_f reads the last block\'s (h.23\'s) output');
      await pg.screenshot({ path: join(out, '17-gpt24-unfolded.png') });
      // Fold: a click on the open family's header folds it again.
      fp = await pg.evaluate(() => cg.screenPos('g:transformer.h'));
      await pg.mouse.click(fp.x, fp.y);
      await pg.waitForFunction(() => !cg.isExpanded('g:transformer.h') && !cg.pending(), null, { timeout: 10000 }).catch(() => {});
      check(await pg.evaluate(() => !cg.isExpanded('g:transformer.h') && cg.node('g:transformer.h').drawn && !cg.node('g:transformer.h.5').drawn), 'gpt-24: a click on the open family\'s header folds it back into one box');
      // Instance selection: the family's inspector opens block 17 alone and selects it; the
      // inspector then shows the summary's figures of that instance, as `query module` gives them.
      await pg.evaluate(() => { location.hash = '#view=dataflow&sel=g%3Atransformer.h'; });
      await pg.waitForSelector('#fam-one');
      await pg.fill('#fam-k', '17'); await pg.click('#fam-one');
      await pg.waitForFunction(() => cg.isExpanded('g:transformer.h.17') && cg.state.sel === 'g:transformer.h.17' && !cg.pending(), null, { timeout: 10000 });
      const opened = await pg.evaluate(() => { const o = []; for (let k = 1; k < 24; k++) if (cg.isExpanded('g:transformer.h.' + k)) o.push(k); return o; });
      check(opened.join() === '17', 'gpt-24: the inspector opens the chosen instance (h.17) alone and selects it: open ' + opened);
      const q = JSON.parse(readFileSync(process.env.CG_GPT24_QUERY, 'utf8')).items[0];
      const fields = await pg.$$eval('#insp-body dl', (dls) => { const o = {}; dls.forEach((d) => { const dt = d.querySelectorAll('dt'); dt.forEach((t) => { if (!(t.textContent in o)) o[t.textContent] = t.nextElementSibling.textContent; }); }); return o; });
      const fmt = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
      const want = { output_shape: q.output_shape, mult_adds: (q.mult_adds_lower_bound ? '≥ ' : '') + q.mult_adds, parameters: fmt(q.parameter_count),
        weights: (q.weights_bytes / 1048576).toFixed(2) + ' MB at ' + q.weights_dtype };
      const diff = Object.keys(want).filter((k) => fields[k] !== want[k]);
      check(diff.length === 0 && /^\[b, t, 1024\]$/.test(fields.output_shape) && fields.parameters === '12,596,224',
        'gpt-24: the inspector of instance h.17 shows its output shape, Mult-Adds, parameters and weights as `query module` does: ' + JSON.stringify(want) + (diff.length ? ' but got ' + JSON.stringify(fields) : ''));
      // No figure in the inspector is cut or broken inside a number, even at its narrowest.
      await pg.setViewportSize({ width: 1000, height: 900 });
      await pg.waitForTimeout(100);
      const insp = await pg.$$eval('#insp-body dd.fig', (ds) => ds.map((d) => ({ t: d.textContent, over: d.scrollWidth > d.clientWidth + 0.5, lines: Math.round(d.getBoundingClientRect().height / parseFloat(getComputedStyle(d).lineHeight || '16')), words: d.textContent.split(' ').length })));
      const badFig = insp.filter((d) => d.over || (d.words === 1 && d.lines > 1));
      check(insp.length >= 4 && badFig.length === 0, `gpt-24: at 1000 px no inspector figure overflows or breaks inside a number (${insp.length} figures)` + (badFig.length ? ': ' + JSON.stringify(badFig) : ''));
      await pg.setViewportSize({ width: 1280, height: 900 });
      await pg.screenshot({ path: join(out, '18-gpt24-instance.png') });
      // Open every instance with everything inside it.
      await pg.evaluate(() => { location.hash = '#view=dataflow&sel=g%3Atransformer.h'; });
      await pg.waitForSelector('#fam-all'); await pg.click('#fam-all');
      await pg.waitForFunction(() => cg.isExpanded('g:transformer.h.23.mlp') && !cg.pending(), null, { timeout: 20000 });
      const every = await pg.evaluate(() => { const miss = []; for (let k = 0; k < 24; k++) ['', '.attn', '.mlp'].forEach((s) => { if (!cg.isExpanded('g:transformer.h.' + k + s)) miss.push(k + s); }); return miss; });
      check(every.length === 0, `gpt-24: "Open all 24 instances" opens every block with its attention and MLP` + (every.length ? ': closed ' + every.slice(0, 5) : ''));
      // Edge labels: the fused qkv projection fans out into three parallel chains per block.
      const lo = await labelOverlaps(pg);
      check(lo.bad.length === 0 && lo.labelled > 500 && lo.placed >= 0.8 * lo.labelled && lo.drawn > 0,
        `gpt-24 with every block open, at 100 %: no edge label overlaps another label or a box (${lo.placed} of ${lo.labelled} labels placed, ${lo.drawn} in view)` + (lo.bad.length ? ': ' + lo.bad.slice(0, 4).join(' | ') : ''));
      await pg.screenshot({ path: join(out, '20-gpt24-labels.png') });
      // Tables at 1280 px: nothing cut in the expanded tree or the findings.
      for (const v of ['architecture', 'findings']) {
        await pg.click('#tab-' + v); await pg.waitForFunction((x) => cg.state.view === x, v, { timeout: 10000 });
        if (v === 'architecture') await pg.click('#arch-expand');
        const r = await cutCells(pg, v);
        check((r.cells > 0 || v === 'findings') && r.cut.length === 0, `gpt-24 ${v} at 1280 px: no cut cell among ${r.cells}` + (r.cut.length ? ': ' + r.cut.slice(0, 5).join(' | ') : ''));
      }
      await pg.screenshot({ path: join(out, '19-gpt24-architecture-1280.png') });
      await pg.close();
    }
    // Issue 18: at 1280 px no table cell is cut, on the synthetic report (every view, the profile
    // included), the demo report and a model with billions of weights.
    const p1280 = await browser.newPage({ viewport: { width: 1280, height: 800 } }); watchNetwork(p1280, bad);
    const noCut = async (pg, what, v) => {
      await pg.click('#tab-' + v); await pg.waitForFunction((x) => cg.state.view === x, v, { timeout: 10000 });
      if (v === 'architecture') await pg.click('#arch-expand');
      const r = await cutCells(pg, v);
      check((r.cells > 0 || v === 'findings') && r.cut.length === 0, `${what} ${v} at 1280 px: no cut cell among ${r.cells}` + (r.cut.length ? ': ' + r.cut.slice(0, 5).join(' | ') : ''));
      // The inspector of the view's first rows (a finding's "focus operation …" link, a
      // checkpoint row's "parameter … in the tree") cuts nothing either.
      const icut = [];
      for (let i = 0; i < 3; i++) {
        // A finding's row opens the dataflow view: come back for the next row.
        if (await pg.evaluate(() => cg.state.view) !== v) { await pg.click('#tab-' + v); await pg.waitForFunction((x) => cg.state.view === x, v, { timeout: 10000 }); }
        const row = pg.locator('#view-' + v + ' .vrow').nth(i);
        if (!(await row.count())) break;
        await row.click(); icut.push(...(await inspectorCut(pg)));
      }
      if (await pg.evaluate(() => cg.state.view) !== v) { await pg.click('#tab-' + v); await pg.waitForFunction((x) => cg.state.view === x, v, { timeout: 10000 }); }
      check(icut.length === 0, `${what} ${v} at 1280 px: the inspector of its first rows cuts no text` + (icut.length ? ': ' + icut.slice(0, 4).join(' | ') : ''));
      return r;
    };
    await p1280.goto('file://' + file);
    await p1280.waitForFunction(() => window.cg && cg.ready, null, { timeout: 10000 });
    for (const v of ['architecture', 'findings', 'checkpoint', 'profile']) await noCut(p1280, 'synthetic', v);
    await p1280.click('#tab-findings');
    check(await p1280.evaluate(() => Array.from(document.querySelectorAll('#fi-table .vrow')).some((r) => r.getBoundingClientRect().height > 30)),
      'a long finding message wraps onto more lines (its row grows) instead of being cut');
    if (process.env.CG_DEMO_HTML) {
      await p1280.goto('file://' + process.env.CG_DEMO_HTML);
      await p1280.waitForFunction(() => window.cg && cg.ready, null, { timeout: 20000 });
      for (const v of ['architecture', 'findings', 'checkpoint']) await noCut(p1280, 'demo', v);
      await p1280.screenshot({ path: join(out, '12-demo-checkpoint-1280.png') });
    }
    if (process.env.CG_BIG_HTML) {
      // tiny-llama under an 8B-sized config: 8,030,261,248 weights.
      await p1280.goto('file://' + process.env.CG_BIG_HTML + '#view=architecture');
      await p1280.waitForFunction(() => window.cg && cg.ready, null, { timeout: 20000 });
      await noCut(p1280, 'large-number', 'architecture');
      await p1280.screenshot({ path: join(out, '13-large-architecture-1280.png') });
      const total = (await p1280.textContent('#arch-stat')).match(/([\d,]+) weights/)[1];
      const top = await p1280.evaluate(() => { const d = document.querySelector('#arch-tree .vrow .num'); return { text: d.textContent, title: d.title }; });
      check(/^\d+(\.\d+)? [KMBT]$/.test(top.text) && top.title === total + ' parameters',
        `where narrow, the total is compact (${top.text}) with the exact figure in its tooltip (${top.title})`);
      await p1280.locator('#arch-tree .vrow').first().click();
      check((await p1280.textContent('#insp-body')).includes('#params: ' + total), 'the inspector shows the exact figure ' + total);
      // Wide enough, the same table shows exact figures.
      await p1280.setViewportSize({ width: 1920, height: 900 });
      await p1280.waitForTimeout(200);
      const wide = await p1280.evaluate(() => document.querySelector('#arch-tree .vrow .num').textContent);
      check(wide === total && (await cutCells(p1280, 'architecture')).cut.length === 0, `at 1920 px the total is exact (${wide}) and nothing is cut`);
      await p1280.screenshot({ path: join(out, '14-large-architecture-1920.png') });
    }
    // Issue 37, what a newcomer sees at 1280 px: the header names the model (its root), the
    // function selector's text is whole, call sites read `x.forward`, the tree runs in execution
    // order, the Findings badge counts findings (not dependency-source notes), inspector keys are
    // never broken or clipped, ids are shown decoded.
    await p1280.setViewportSize({ width: 1280, height: 800 });
    for (const [what, file] of [['demo', process.env.CG_DEMO_HTML], ['llama', process.env.CG_LLAMA_HTML]]) {
      if (!file) continue;
      await p1280.goto('file://' + file);
      await p1280.waitForFunction(() => window.cg && cg.ready && window.__cgDataflowReady !== undefined, null, { timeout: 30000 });
      const root = process.env[what === 'demo' ? 'CG_DEMO_ROOT' : 'CG_LLAMA_ROOT'];
      const head = await p1280.evaluate((root) => {
        const m = document.getElementById('model-name'), c = document.createElement('canvas').getContext('2d'); c.font = getComputedStyle(m).font;
        return { text: m.textContent, title: document.title, shown: m.getBoundingClientRect().width >= c.measureText(root).width };
      }, root);
      check(head.text.startsWith(root) && head.title.startsWith(root) && head.shown, `${what}: the header names the model ${root}, on screen at 1280 px: "${head.text}" / "${head.title}"`);
      const sel = await p1280.evaluate(() => {
        const s = document.getElementById('df-fn'), o = s.options[s.selectedIndex], cs = getComputedStyle(s), c = document.createElement('canvas').getContext('2d');
        c.font = cs.font; return { text: o.text, title: s.title, fits: c.measureText(o.text).width + 28 <= s.clientWidth };
      });
      check(sel.title === sel.text && sel.fits, `${what}: the function selector shows "${sel.text}" whole (or in its tooltip: "${sel.title}")`);
      const top = await p1280.evaluate(() => cg.unrolled().filter((o) => o.instance === '').map((o) => cg.node(o.id).name));
      check(top.length > 0 && !top.includes('forward') && top.some((n) => /^[\w.{}]+\.forward$/.test(n)),
        `${what}: top-level operations say whose forward they call: ${top.slice(0, 8).join(', ')}`);
      await p1280.click('#tab-architecture');
      await p1280.click('#arch-expand');
      const names = await p1280.evaluate(() => cg.treeRows());
      const at = (n) => names.indexOf('module ' + n);
      // Siblings as the forward runs them (alphabetical order would put attn before rms_1, down before gate).
      const runs = what === 'demo'
        ? [['input_layernorm', 'self_attn', 'post_attention_layernorm', 'mlp'], ['gate_proj', 'up_proj', 'down_proj']]
        : [['wte', 'blocks', 'ln_f', 'lm_head'], ['rms_1', 'attn', 'rms_2', 'mlp'], ['c_fc1', 'c_fc2', 'c_proj']];
      const seen = runs.map((r) => r.map(at));
      check(seen.every((r) => r.every((i, k) => i >= 0 && (k === 0 || i > r[k - 1]))),
        `${what}: the Architecture tree runs in execution order (${seen.map((r) => r.join(' < ')).join('; ')})` + (seen.flat().includes(-1) ? ': ' + names.slice(0, 40).join(', ') : ''));
      const tc = await cutCells(p1280, 'architecture');
      check(tc.cut.length === 0, `${what}: expanded Architecture tree at 1280 px: no cut cell` + (tc.cut.length ? ': ' + tc.cut.slice(0, 4).join(' | ') : ''));
      await p1280.screenshot({ path: join(out, `37-${what}-architecture-1280.png`) });
      const badge = await p1280.evaluate(() => { const b = document.querySelector('#tab-findings .badge'); return b ? Number(b.textContent) : 0; });
      const expect = Number(process.env[what === 'demo' ? 'CG_DEMO_FINDINGS' : 'CG_LLAMA_FINDINGS']);
      check(badge === expect, `${what}: the Findings badge counts ${expect} findings, not the dependency-source notes (badge ${badge})`);
      // A module with long keys (output_shape, mult_adds_lower_bound, qualified_type) in the inspector.
      await p1280.locator('#arch-tree .vrow', { hasText: 'q_proj' }).first().click();
      const keys = await p1280.evaluate(() => Array.from(document.querySelectorAll('#insp-body dt')).map((d) => {
        // A key is broken when its text runs over more than one line (a grid row may be taller).
        const r = document.createRange(); r.selectNodeContents(d);
        const lines = new Set(Array.from(r.getClientRects(), (x) => Math.round(x.top))).size;
        return { t: d.textContent, lines, clipped: d.scrollWidth > d.clientWidth + 0.5 || d.getBoundingClientRect().right > document.getElementById('inspector').getBoundingClientRect().right + 0.5 };
      }));
      const broken = keys.filter((k) => k.clipped || k.lines > 1);
      check(keys.length > 5 && broken.length === 0, `${what}: at 1280 px no inspector key is broken or clipped` + (broken.length ? ': ' + broken.map((k) => k.t).join(', ') : ''));
      const ids = await p1280.evaluate(() => Array.from(document.querySelectorAll('#insp-body dd')).map((d) => d.textContent).filter((t) => /%[0-9A-F]{2}/.test(t)));
      check(ids.length === 0, `${what}: ids in the inspector are shown decoded` + (ids.length ? ': ' + ids.slice(0, 3).join(' | ') : ''));
      await p1280.screenshot({ path: join(out, `37-${what}-inspector-1280.png`) });
    }
    await p1280.close();
    // Hostile text stays text.
    const xss = await page.evaluate(() => ({ pwned: window.__pwned, imgs: document.querySelectorAll('img').length, title: document.title }));
    check(xss.pwned === undefined && xss.imgs === 0, 'XSS fixture is inert (no handler ran, no <img> element)');
    check(xss.title.includes('</script><img'), 'hostile model name is shown as text in the title');
    check(!/<\/script><img/i.test(html.split('id="cg-payload"')[1].split('</script>')[0]), 'payload contains no raw </script>');
    check(bad.length === 0, 'no network request, page error or console error' + (bad.length ? ': ' + bad.join('; ') : ''));
  } finally { await browser.close(); rmSync(profile, { recursive: true, force: true }); }
  if (failures.length) { console.log(`${failures.length} check(s) failed`); process.exit(1); }
  console.log('all browser checks passed; screenshots in ' + out);
}
if (import.meta.url.endsWith(process.argv[1].split('/').pop())) main().catch((e) => { console.error(e); process.exit(1); });
