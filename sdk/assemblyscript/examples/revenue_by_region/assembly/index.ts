// revenue_by_region in AssemblyScript: revenue sum and order count per region, as examples/revenue_by_region does
// in WebAssembly text, with the same partials and the same result.
//
// Bound with the selector  SELECT region, amount FROM orders  (region text not null, amount float8 not null).
//   run     per region of the partition, emits  p<partition>/<region>/sum = sum of amount,
//                                               p<partition>/<region>/count = number of rows
//   reduce  adds the partials up per region:  {"<region>": {"sum": <number>, "count": <integer>}, ...}
//           regions in ascending byte order
import { emit, fail, json, readArgs, readPartials, Input, Type } from "thresher-guest";
export { thresher_abi_version } from "thresher-guest";

class Region {
  constructor(public name: string, public sum: f64 = 0, public count: f64 = 0) {}
}

/** The region named name, appended the first time it is seen (regions keep the order first seen). */
function at(regions: Region[], name: string): Region {
  for (let i = 0; i < regions.length; i++) if (regions[i].name == name) return regions[i];
  const r = new Region(name);
  regions.push(r);
  return r;
}

export function run(argsLen: i32): i32 {
  if (readArgs(argsLen) === null) return fail("input ended before the announced length");
  const input = new Input();
  const regions: Region[] = [];
  let partition: u32 = 0;
  for (let batch = input.nextBatch(); batch !== null; batch = input.nextBatch()) {
    if (batch.columns.length != 2 || !batch.is(0, "region", Type.Text, false) || !batch.is(1, "amount", Type.Float64, false)) {
      return fail("batch is not TRB1 with columns region TEXT NOT NULL, amount FLOAT64 NOT NULL");
    }
    partition = batch.partition;
    for (let row: u32 = 0; row < batch.rows; row++) {
      const r = at(regions, batch.text(0, row));
      r.sum += batch.float64(1, row);
      r.count += 1;
    }
  }
  if (input.failed) return fail("input ended before the announced length");
  for (let i = 0; i < regions.length; i++) {
    const prefix = "p" + partition.toString() + "/" + regions[i].name + "/";
    if (!emit(prefix + "sum", regions[i].sum) || !emit(prefix + "count", regions[i].count)) return fail("emit refused");
  }
  return 0;
}

/** Byte order of the names' UTF-8, as the other samples sort them. */
function before(a: string, b: string): i32 {
  const x = Uint8Array.wrap(String.UTF8.encode(a));
  const y = Uint8Array.wrap(String.UTF8.encode(b));
  const n = min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] != y[i]) return <i32>x[i] - <i32>y[i];
  return x.length - y.length;
}

export function reduce(partialsLen: i32, argsLen: i32): i32 {
  const partials = readPartials(partialsLen);
  if (partials === null) return fail("partials are not TPL1 or are truncated");
  if (readArgs(argsLen) === null) return fail("input ended before the announced length");
  const regions: Region[] = [];
  while (partials.next()) {
    const key = partials.key;
    const first = key.indexOf("/");
    const last = key.lastIndexOf("/");
    if (first < 0 || last <= first) return fail("a partial key is not p<partition>/<region>/<sum|count>");
    const r = at(regions, key.substring(first + 1, last));
    const suffix = key.substring(last + 1);
    if (suffix == "sum") r.sum += partials.value;
    else if (suffix == "count") r.count += partials.value;
    else return fail("a partial key is not p<partition>/<region>/<sum|count>");
  }
  regions.sort((a: Region, b: Region): i32 => before(a.name, b.name));
  json.beginObject();
  for (let i = 0; i < regions.length; i++) {
    json.key(regions[i].name);
    json.beginObject();
    json.key("sum");
    json.number(regions[i].sum);
    json.key("count");
    json.integer(<i64>regions[i].count);
    json.endObject();
  }
  json.endObject();
  return 0;
}
