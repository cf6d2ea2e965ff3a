// A Thresher component in AssemblyScript: copy this directory, rename the binding in thresher.json, write run
// and reduce. This one counts rows: run emits p<partition>/rows = the partition's row count; reduce writes
// {"rows": <total>}.   Build: make (npm installs the pinned AssemblyScript)
// Try it:  ./thresher component test . --csv rows.csv --partitions 4
import { emit, fail, json, readArgs, readPartials, Input } from "thresher-guest";
export { thresher_abi_version } from "thresher-guest";

export function run(argsLen: i32): i32 {
  if (readArgs(argsLen) === null) return fail("input ended before the arguments");
  const input = new Input();
  let partition: u32 = 0;
  let rows: f64 = 0;
  // a partition of any size comes as one batch after another
  for (let batch = input.nextBatch(); batch !== null; batch = input.nextBatch()) {
    partition = batch.partition;
    rows += <f64>batch.rows;
  }
  if (input.failed) return fail("a batch could not be read");
  // keys are unique across partitions
  if (!emit("p" + partition.toString() + "/rows", rows)) return fail("emit refused");
  return 0;
}

export function reduce(partialsLen: i32, argsLen: i32): i32 {
  const partials = readPartials(partialsLen);
  if (partials === null) return fail("partials are malformed");
  if (readArgs(argsLen) === null) return fail("input ended before the arguments");
  let total: f64 = 0;
  while (partials.next()) total += partials.value;
  json.beginObject();
  json.key("rows");
  json.integer(<i64>total);
  json.endObject();
  return 0;
}
