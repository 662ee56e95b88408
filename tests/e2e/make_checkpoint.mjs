#!/usr/bin/env node
// Writes a safetensors checkpoint for an IR's parameters with three known defects, for the
// end-to-end tests of `verify`/`audit`/`view --checkpoint`: model.norm.weight is left out
// (missing), model.layers.0.input_layernorm.weight gets shape [1, 2] (shape mismatch) and an
// extra rotary_emb.inv_freq is added (unclaimed). Tensor data is a sparse hole: only headers count.
//   node make_checkpoint.mjs IR.json OUT.safetensors
import { readFileSync, openSync, writeSync, ftruncateSync, closeSync } from 'node:fs';

const [irPath, out] = process.argv.slice(2);
const ir = JSON.parse(readFileSync(irPath, 'utf8'));
const header = {}; let offset = 0;
const add = (name, shape) => {
  const bytes = shape.reduce((a, b) => a * b, 1) * 4;
  header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes] }; offset += bytes;
};
for (const p of ir.parameters) {
  if (!p.shape || p.key.includes('{')) continue;
  if (p.key === 'model.norm.weight') continue;
  add(p.key, p.key === 'model.layers.0.input_layernorm.weight' ? [1, 2] : p.shape);
}
add('rotary_emb.inv_freq', [64]);
let json = JSON.stringify(header);
json += ' '.repeat((8 - (json.length % 8)) % 8);
const len = Buffer.alloc(8); len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
const fd = openSync(out, 'w');
writeSync(fd, len); writeSync(fd, json);
ftruncateSync(fd, 8 + Buffer.byteLength(json) + offset);
closeSync(fd);
