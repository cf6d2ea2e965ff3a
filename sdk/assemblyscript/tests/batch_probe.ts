// batch_probe: the AssemblyScript SDK's view of the row batches it is given, as partials, so a test can hold it
// against the host's own decoding of the golden vectors (tests: GuestSdksIT); the same view as sdk/c/tests/batch_probe.c.
import { emit, fail, json, readArgs, Input, Type } from "thresher-guest";
export { thresher_abi_version } from "thresher-guest";

function fnv(h: u32, ptr: usize, n: u32): u32 {
  for (let i: u32 = 0; i < n; i++) {
    h ^= load<u8>(ptr + i);
    h *= 16777619;
  }
  return h;
}

export function run(argsLen: i32): i32 {
  if (readArgs(argsLen) === null) return fail("no arguments");
  const input = new Input();
  const scratch = memory.data(8);
  let batches = 0;
  for (let b = input.nextBatch(); b !== null; b = input.nextBatch()) {
    if (batches++ > 0) continue;
    emit("partition", <f64>b.partition);
    emit("rows", <f64>b.rows);
    emit("columns", <f64>b.columns.length);
    for (let c = 0; c < b.columns.length; c++) {
      const col = b.columns[c];
      let nulls: u32 = 0;
      let h: u32 = 2166136261;
      for (let r: u32 = 0; r < b.rows; r++) {
        if (b.isNull(c, r)) {
          nulls++;
          store<u8>(scratch, 0xFF);
          h = fnv(h, scratch, 1);
          continue;
        }
        if (col.type == Type.Int64) {
          store<i64>(scratch, b.int64(c, r));
          h = fnv(h, scratch, 8);
        } else if (col.type == Type.Float64) {
          store<f64>(scratch, b.float64(c, r));
          h = fnv(h, scratch, 8);
        } else if (col.type == Type.Bool) {
          store<u8>(scratch, b.boolean(c, r) ? 1 : 0);
          h = fnv(h, scratch, 1);
        } else {
          const v = b.bytes(c, r);
          store<u32>(scratch, v.length);
          h = fnv(fnv(h, scratch, 4), v.dataStart, v.length);
        }
      }
      const name = String.UTF8.encode(col.name);
      emit("c" + c.toString() + "/type", <f64>col.type);
      emit("c" + c.toString() + "/nullable", col.nullable ? 1 : 0);
      emit("c" + c.toString() + "/name", <f64>fnv(2166136261, changetype<usize>(name), name.byteLength));
      emit("c" + c.toString() + "/nulls", <f64>nulls);
      emit("c" + c.toString() + "/values", <f64>h);
    }
  }
  if (input.failed) return fail("a batch could not be read");
  emit("batches", <f64>batches);
  return 0;
}

export function reduce(partialsLen: i32, argsLen: i32): i32 {
  json.beginObject();
  json.endObject();
  return 0;
}
