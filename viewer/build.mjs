#!/usr/bin/env node
// Bundles the viewer into one HTML template: inlines CSS, the dagre layout library (from
// node_modules, pinned in package.json) and our JS, and pins every inline script/style with a
// SHA-256 hash in the Content-Security-Policy. Two placeholders stay for the C++ side to fill:
// @@CG_TITLE@@ (HTML-escaped) and @@CG_PAYLOAD@@ (escaped JSON).
//   node viewer/build.mjs --html OUT.html      template as HTML (used by tests and the bench)
//   node viewer/build.mjs --header OUT.hpp     the same template as a C++ header
import { readFileSync, writeFileSync, renameSync, mkdirSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const src = (f) => readFileSync(join(here, 'src', f), 'utf8');

export function buildTemplate() {
  const require = createRequire(join(here, '..', 'package.json'));
  let dagrePath;
  // The package's export map hides dist/, so locate it from its main entry point.
  try { dagrePath = join(dirname(require.resolve('@dagrejs/dagre')), 'dagre.min.js'); readFileSync(dagrePath); } catch {
    throw new Error('viewer/build.mjs: npm package @dagrejs/dagre is missing; run scripts/setup.sh (npm ci)');
  }
  const dagre = readFileSync(dagrePath, 'utf8');
  const layout = src('layout.js');
  const script = `${dagre}\n${layout}\n${src('app.js')}`;
  const worker = `${dagre}\n${layout}\n${src('worker.js')}`;
  const style = src('style.css');
  // Inline code cannot be escaped inside <script>, so refuse anything that would end it early.
  for (const [name, text] of [['script', script], ['worker', worker], ['style', style]]) {
    if (/<\/(script|style)|<!--/i.test(text)) throw new Error(`viewer/build.mjs: ${name} contains a closing tag or <!--`);
    if (/https?:\/\//.test(text)) throw new Error(`viewer/build.mjs: ${name} contains a URL; the viewer must not reference the network`);
  }
  const h = (t) => `'sha256-${createHash('sha256').update(t, 'utf8').digest('base64')}'`;
  const csp = [`default-src 'none'`, `script-src ${h(script)}`, `style-src ${h(style)}`, `worker-src blob:`,
    `img-src data:`, `base-uri 'none'`, `form-action 'none'`].join('; ');
  const tpl = src('template.html');
  const parts = { CG_CSP: csp, CG_STYLE: style, CG_WORKER: worker, CG_SCRIPT: script };
  // One pass over the template, so text inside a part can never be taken for a placeholder.
  return tpl.replace(/@@(CG_[A-Z]+)@@/g, (m, k) => (k in parts ? parts[k] : m));
}

// Same escaping as src/viewer/html.cpp (kept in step by tests on both sides).
export function escapePayload(json) {
  return json.replace(/[<>&\u2028\u2029]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}
export function escapeHtml(s) {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}
// The tables only the architecture and checkpoint views need go into the second, deferred part
// (as src/viewer/payload.cpp splits them); each part above 1 MB (treeGzipAbove: the tree part above
// that; the C++ side uses 128 KB) goes gzip+base64 (as the C++ side does when built with zlib).
export const TREE_KEYS = ['modules', 'parameters', 'checkpoint'];
export function assemble(template, payloadObj, { gzipAbove = 1 << 20, treeGzipAbove = gzipAbove } = {}) {
  const title = escapeHtml(String((payloadObj.model && payloadObj.model.name) || 'model'));
  const main = {}, tree = {};
  for (const [k, v] of Object.entries(payloadObj)) (TREE_KEYS.includes(k) ? tree : main)[k] = v;
  main.summary = { ...(main.summary || {}), checkpoint: tree.checkpoint != null };
  const part = (obj, above) => {
    const json = JSON.stringify(obj);
    const big = Buffer.byteLength(json) > above;
    return [big ? '' : escapePayload(json), big ? gzipSync(json, { level: 6 }).toString('base64') : ''];
  };
  const [payload, gz] = part(main, gzipAbove), [treeJson, treeGz] = part(tree, treeGzipAbove);
  const parts = { CG_TITLE: title, CG_PAYLOAD: payload, CG_PAYLOAD_GZ: gz, CG_TREE: treeJson, CG_TREE_GZ: treeGz };
  return template.replace(/@@(CG_TITLE|CG_PAYLOAD|CG_PAYLOAD_GZ|CG_TREE|CG_TREE_GZ)@@/g, (m, k) => parts[k]);
}

function writeAtomic(path, text) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path + '.tmp', text); renameSync(path + '.tmp', path);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [mode, out] = process.argv.slice(2);
  const tpl = buildTemplate();
  if (mode === '--html') writeAtomic(out, tpl);
  else if (mode === '--header') {
    // Split into chunks: raw string literals have per-literal limits on some compilers.
    const chunks = [];
    for (let i = 0; i < tpl.length; i += 60000) chunks.push(tpl.slice(i, i + 60000));
    if (chunks.some((c) => c.includes(')cgv"'))) throw new Error('viewer/build.mjs: delimiter clash');
    writeAtomic(out, `// Generated by viewer/build.mjs from viewer/src; do not edit.\n#pragma once\n#include <string_view>\n` +
      `namespace cg::viewer::generated {\ninline constexpr std::string_view kTemplateParts[] = {\n` +
      chunks.map((c) => `R"cgv(${c})cgv"`).join(',\n') + `};\n}  // namespace cg::viewer::generated\n`);
  } else { console.error('usage: build.mjs --html OUT | --header OUT'); process.exit(2); }
}
