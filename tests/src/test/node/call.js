// Calls a binding through node-postgres the three ways applications do, and prints one JSON
// line with what came back, for NodePostgresIT to check: a simple query, a parameterized query
// (extended protocol, unnamed statement), a named prepared statement run several times, and a
// typed error, and row mode (`rows: N`: Execute + Flush, Sync only after the answer) for a failing
// and a succeeding call, each bounded so that a hang fails rather than blocks.
// Usage: node call.js <host> <port> <user> <password>
const { Client } = require('pg');

const STEP_MS = 20000;

// Rejects when the promise has not settled within ms, naming the step.
function bounded(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(what + ' did not finish within ' + ms + ' ms')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function main() {
  const [host, port, user, password] = process.argv.slice(2);
  const client = new Client({ host, port: Number(port), user, password, database: 'thresher' });
  await client.connect();
  const out = {};
  try {
    const simple = await client.query("CALL BINDING revenue_by_region('{}')");
    out.simple = simple.rows[0].result;
    out.fields = simple.fields.map((f) => ({ name: f.name, dataTypeID: f.dataTypeID }));

    const parameterized = await client.query('CALL BINDING revenue_by_region($1)', ['{"from": "node"}']);
    out.parameterized = parameterized.rows[0].result;

    out.prepared = [];
    for (let i = 0; i < 6; i++) {
      const r = await client.query({ name: 'revenue', text: 'CALL BINDING revenue_by_region($1)', values: ['{}'] });
      out.prepared.push(r.rows[0].result);
    }

    try {
      await client.query("CALL BINDING no_such_binding('{}')");
      out.error = null;
    } catch (e) {
      out.error = { code: e.code, detail: e.detail };
    }
    const after = await client.query("CALL BINDING revenue_by_region('{}')");
    out.afterError = after.rows[0].result;

    const rows = await bounded(client.query({ text: 'CALL BINDING revenue_by_region($1)', values: ['{}'], rows: 10 }),
      STEP_MS, 'a call in row mode');
    out.rowMode = rows.rows[0].result;
  } finally {
    await bounded(client.end(), STEP_MS, 'closing the connection');
  }

  // A failing call in row mode, on a connection of its own: node-postgres (8.23) sends no Sync after
  // the error of a row-mode query, so that connection waits for a ReadyForQuery that never comes, as it
  // would with PostgreSQL; the error itself must arrive without a Sync.
  const rowClient = new Client({ host, port: Number(port), user, password, database: 'thresher' });
  await bounded(rowClient.connect(), STEP_MS, 'connecting');
  try {
    await bounded(rowClient.query({ text: 'CALL BINDING no_such_binding($1)', values: ['{}'], rows: 10 }),
      STEP_MS, 'a failing call in row mode');
    out.rowsError = null;
  } catch (e) {
    out.rowsError = { code: e.code, message: e.message };
  } finally {
    await bounded(rowClient.end(), STEP_MS, 'closing the row-mode connection');
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

// Whatever hangs, the script ends, so NodePostgresIT fails instead of waiting.
setTimeout(() => {
  process.stderr.write('call.js did not finish within 90 s\n');
  process.exit(2);
}, 90000).unref();

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
