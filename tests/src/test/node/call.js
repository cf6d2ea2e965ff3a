// Calls a binding through node-postgres the three ways applications do, and prints one JSON
// line with what came back, for NodePostgresIT to check: a simple query, a parameterized query
// (extended protocol, unnamed statement), a named prepared statement run several times, and a
// typed error. Usage: node call.js <host> <port> <user> <password>
const { Client } = require('pg');

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
  } finally {
    await client.end();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
