// Runs the SQL block of docs/at-scale.md through DuckDB over the trace files given as arguments
// and prints the rows as JSON ({path: {calls, total_ns, self_ns}}). The block is the one marked
// `<!-- at-scale-sql:` (runtime/4 traces) or, with CG_AT_SCALE_SQL=compact, the one marked
// `<!-- at-scale-sql-compact:` (runtime/4-compact/1 traces).
// Usage: [CG_AT_SCALE_SQL=compact] node at_scale_duckdb.mjs <repo root> <trace.jsonl>...
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const [root, ...traces] = process.argv.slice(2);
const doc = readFileSync(`${root}/docs/at-scale.md`, 'utf8');
const name = process.env.CG_AT_SCALE_SQL === 'compact' ? 'at-scale-sql-compact' : 'at-scale-sql';
const marker = doc.indexOf(`<!-- ${name}:`);
const block = doc.slice(marker).match(/```sql\n([\s\S]*?)```/);
if (marker < 0 || !block) throw new Error(`docs/at-scale.md: no ${name} block`);
const list = '[' + traces.map((t) => `'${t.replaceAll("'", "''")}'`).join(', ') + ']';
const sql = block[1].replace('$traces', list);
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const reader = await conn.runAndReadAll(sql);
const out = {};
for (const row of reader.getRowObjects()) {
  out[row.path] = { calls: Number(row.calls), total_ns: Number(row.total_ns), self_ns: Number(row.self_ns) };
}
process.stdout.write(JSON.stringify(out) + '\n');
