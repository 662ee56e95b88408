#!/usr/bin/env node
// Synthetic candle-graph/viewer/1 payload of a Llama-shaped decoder with N layers: modules,
// parameters, ops chained through tensors (with residual edges), timings, findings and a
// checkpoint report. --xss puts hostile text into every user-visible string field.
//   node viewer/gen-synthetic.mjs --layers 4000 [--xss] > payload.json
export function synth(layers, xss, compact = layers > 50) {
  const bad = xss ? '</script><img src=x onerror="window.__pwned=1">\u2028<b>&amp;' : '';
  const modules = [], parameters = [], operations = [], tensors = [], findings = [];
  const H = 4096, F = 11008, V = 32000;
  let mid = 0, pid = 0, oid = 0, tid = 0;
  const mod = (name, type, prefix, parent, extra = {}) => { const m = { id: `m${mid++}`, name, type, prefix, parent, component: 'c0', source: { file: 'src/model.rs' + bad, line: 10 + mid % 300 }, confidence: 'exact', ...extra }; modules.push(m); return m; };
  const par = (m, leaf, shape, extra = {}) => { const p = { id: `p${pid++}`, key: `${m.prefix}.${leaf}${bad}`, module: m.id, shape, dtype: 'bf16', confidence: 'exact', ...extra }; parameters.push(p); return p; };
  const ten = (shape, dtype = 'bf16', extra = {}) => { const t = { id: `t${tid++}`, name: `t${tid}`, shape, dtype, ...extra }; tensors.push(t); return t.id; };
  let prev = ten(['B', 'S']);
  const op = (op, module, inputs, shape, extra = {}) => { const out = ten(shape, extra.dtype); const o = { id: `o${oid++}`, op, module, function: 'f0', phases: ['inference'], inputs, outputs: [out], source: { file: 'src/model.rs', line: 100 + oid % 200 }, timing: null, ...extra }; delete o.dtype; operations.push(o); return out; };
  const root = mod('model', 'LlamaModel' + bad, 'model', null);
  const emb = mod('embed_tokens', 'Embedding', 'model.embed_tokens', root.id); par(emb, 'weight', [V, H]);
  prev = op('embedding', 'model.embed_tokens', [prev], ['B', 'S', H]);
  const layersM = mod('layers', 'Vec<DecoderLayer>', 'model.layers', root.id, { repeat: layers });
  for (let i = 0; i < layers; i++) {
    const lp = `model.layers.${i}`, L = mod(String(i), 'DecoderLayer', lp, layersM.id);
    const ln1 = mod('input_layernorm', 'RmsNorm', lp + '.input_layernorm', L.id); par(ln1, 'weight', [H]);
    const at = mod('self_attn', 'Attention', lp + '.self_attn', L.id);
    for (const n of ['q_proj', 'k_proj', 'v_proj', 'o_proj']) { const m = mod(n, 'Linear', `${at.prefix}.${n}`, at.id); par(m, 'weight', [H, H]); par(m, 'bias', [H], { conditional: true, confidence: 'conditional', reason: 'config.attention_bias' }); }
    for (const n of ['q_norm', 'k_norm']) { const m = mod(n, 'RmsNorm', `${at.prefix}.${n}`, at.id); par(m, 'weight', [128]); }
    const ln2 = mod('post_attention_layernorm', 'RmsNorm', lp + '.post_attention_layernorm', L.id); par(ln2, 'weight', [H]);
    const mlp = mod('mlp', 'Mlp', lp + '.mlp', L.id);
    for (const n of ['gate_proj', 'up_proj', 'down_proj']) { const m = mod(n, 'Linear', `${mlp.prefix}.${n}`, mlp.id); par(m, 'weight', n === 'down_proj' ? [H, F] : [F, H]); par(m, 'bias', ['?'], { shape: null, symbolic_shape: ['intermediate_size'], confidence: 'unknown', reason: 'config not bound' }); }
    par(at, 'rotary_inv_freq', [64]); par(L, 'scale', [1]); par(mlp, 'act_scale', [1]); par(ln1, 'bias', [H]); par(ln2, 'bias', [H]); par(at, 'sinks', [32]);
    const resid = prev; const S = ['B', 'S', H];
    let x = op('rms_norm', lp + '.input_layernorm', [prev], S);
    const q = op('matmul', lp + '.self_attn.q_proj', [x], S), k = op('matmul', lp + '.self_attn.k_proj', [x], S), v = op('matmul', lp + '.self_attn.v_proj', [x], S);
    const qn = op('rms_norm', lp + '.self_attn.q_norm', [q], S), kn = op('rms_norm', lp + '.self_attn.k_norm', [k], S);
    let a = op('softmax', lp + '.self_attn', [qn, kn], ['B', 32, 'S', 'S'], i === 1 ? { dtype: 'f32' } : {});
    if (i === 1) tensors[tensors.length - 1].dtype_conflict = true;
    a = op('matmul', lp + '.self_attn', [a, v], S);
    a = op('matmul', lp + '.self_attn.o_proj', [a], S);
    x = op('add', lp, [a, resid], S);
    const h2 = op('rms_norm', lp + '.post_attention_layernorm', [x], S);
    const g = op('matmul', lp + '.mlp.gate_proj', [h2], ['B', 'S', F]), u = op('matmul', lp + '.mlp.up_proj', [h2], ['B', 'S', F]);
    const gu = op('silu_mul', lp + '.mlp', [g, u], ['B', 'S', F], i === 0 ? { grad: 'severed' } : {});
    if (i === 0) tensors[tensors.length - 1].grad = 'severed';
    const d = op('matmul', lp + '.mlp.down_proj', [gu], S);
    prev = op('add', lp, [d, x], S);
  }
  const norm = mod('norm', 'RmsNorm', 'model.norm', root.id); par(norm, 'weight', [H]);
  const head = mod('lm_head', 'Linear', 'lm_head', null); par(head, 'weight', [V, H]);
  prev = op('rms_norm', 'model.norm', [prev], ['B', 'S', H]);
  op('matmul', 'lm_head', [prev], ['B', 'S', V]);
  // Deterministic pseudo-random timings (so profile tables and heat have structure).
  let seed = 7; const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (const o of operations) { const base = o.op === 'matmul' ? 4e5 : o.op === 'softmax' ? 2e5 : 3e4; const mean = base * (0.5 + rnd()); const n = 8; o.timing = { samples: n, total_ns: Math.round(mean * n), mean_ns: Math.round(mean), min_ns: Math.round(mean * 0.8), max_ns: Math.round(mean * 1.6), p50_ns: Math.round(mean), p95_ns: Math.round(mean * 1.4), by_phase: { inference: Math.round(mean * n) } }; }
  const sev = operations.find((o) => o.grad === 'severed');
  findings.push({ id: 'F1', rule: 'gradient.severed' + bad, severity: 'warning', confidence: 'exact', message: 'silu_mul output is detached: gradients stop here ' + bad, source: sev.source, related: [sev.id] });
  const dt = operations.find((o) => o.op === 'softmax' && o.module === 'model.layers.1.self_attn');
  if (dt) findings.push({ id: 'F2', rule: 'dtype.conflict', severity: 'error', confidence: 'exact', message: 'softmax mixes f32 and bf16 inputs', source: dt.source, related: [dt.id] });
  findings.push({ id: 'F3', rule: 'param.unused', severity: 'information', confidence: 'likely', message: 'lm_head.weight may be tied to embed_tokens', source: { file: 'src/model.rs', line: 5 }, related: [parameters.find((p) => p.key.startsWith('lm_head.weight')).id] });
  const checkpoint = { path: 'model.safetensors' + bad, entries: parameters.slice(0, 40).map((p, i) => ({ key: p.key, status: i % 13 === 5 ? 'missing' : i % 17 === 3 ? 'shape_mismatch' : 'matched', expected: p.shape, actual: i % 17 === 3 ? [1, 2] : i % 13 === 5 ? null : p.shape, dtype: 'bf16' })).concat([{ key: 'rotary_emb.inv_freq' + bad, status: 'unclaimed', expected: null, actual: [64], dtype: 'f32' }]) };
  // Big tables go column-compressed (the payload format allows both shapes) and sources as "file:line".
  const src = (o) => { if (o.source && typeof o.source === 'object') o.source = `${o.source.file}:${o.source.line}`; return o; };
  const columns = (rows) => { const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))]; return { columns: cols, rows: rows.map((r) => { src(r); const a = cols.map((c) => (c in r ? r[c] : null)); while (a.length && a[a.length - 1] === null) a.pop(); return a; }) }; };
  return { schema: 'candle-graph/viewer/1', model: { name: 'synthetic-llama' + bad, layers },
    ...(compact ? { modules: columns(modules), parameters: columns(parameters), tensors: columns(tensors), operations: columns(operations) } : {}),
    summary: { operations: operations.length, parameters: parameters.length, modules: modules.length },
    components: [{ id: 'c0', name: 'llama' + bad, root: root.id }],
    ...(compact ? {} : { modules, parameters, tensors, operations }), functions: [{ id: 'f0', name: 'Model::forward' + bad, entrypoint: true }], findings, runtime: { samples: 8 }, checkpoint };
}
if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const a = process.argv.slice(2), layers = Number(a[a.indexOf('--layers') + 1] || 2);
  process.stdout.write(JSON.stringify(synth(layers, a.includes('--xss'))));
}
