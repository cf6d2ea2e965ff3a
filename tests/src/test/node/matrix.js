// Calls a binding through node-postgres the ways applications do, and prints one JSON line with what came back,
// for ClientMatrixIT to check: a simple query, a parameterized query, a named prepared statement run several
// times, a cursor (pg-cursor: a named portal read a few rows at a time), and a typed error. The connection target
// is the URL given (its password, when not in it, from PGPASSWORD, as node-postgres reads it).
// Usage: node matrix.js <url> <binding> <failing binding>
const { Client } = require('pg');
const Cursor = require('pg-cursor');

const STEP_MS = 20000;

function bounded(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(what + ' did not finish within ' + ms + ' ms')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function main() {
  const [url, binding, failing] = process.argv.slice(2);
  const client = new Client({ connectionString: url });
  await bounded(client.connect(), STEP_MS, 'connecting');
  const out = {};
  try {
    out.simple = (await client.query(`CALL BINDING ${binding}('{}')`)).rows[0].result;
    out.parameterized = (await client.query(`CALL BINDING ${binding}($1)`, ['{}'])).rows[0].result;
    out.prepared = [];
    for (let i = 0; i < 3; i++) {
      const r = await client.query({ name: 'matrix', text: `CALL BINDING ${binding}($1::jsonb)`, values: ['{}'] });
      out.prepared.push(r.rows[0].result);
    }
    const cursor = client.query(new Cursor(`CALL BINDING ${binding}($1)`, ['{}']));
    const rows = await bounded(cursor.read(10), STEP_MS, 'reading a cursor');
    out.cursor = rows[0].result;
    out.cursorRows = rows.length;
    out.cursorAfter = (await bounded(cursor.read(10), STEP_MS, 'reading past the end of a cursor')).length;
    await bounded(cursor.close(), STEP_MS, 'closing a cursor');
    try {
      await client.query(`CALL BINDING ${failing}('{}')`);
      out.error = null;
    } catch (e) {
      out.error = e.code;
    }
    out.afterError = (await client.query(`CALL BINDING ${binding}('{}')`)).rows[0].result;
  } finally {
    await bounded(client.end(), STEP_MS, 'closing the connection');
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

setTimeout(() => {
  process.stderr.write('matrix.js did not finish within 90 s\n');
  process.exit(2);
}, 90000).unref();

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
