// The Thresher guest SDK for AssemblyScript: guest ABI 2 (docs/guest-abi.md).
//
// The names match the C header and the Rust crate:
//   run:    readArgs, Input.nextBatch, the Batch accessors, emit, fail, log
//   reduce: readPartials, Partials.next, readArgs, the json writer, fail
//
// A component re-exports thresher_abi_version and exports run and reduce:
//
//   export { thresher_abi_version } from "thresher-guest";
//   export function run(argsLen: i32): i32 { ... }
//   export function reduce(partialsLen: i32, argsLen: i32): i32 { ... }
//
// An HTTP handler (docs/guest-abi.md section 8) re-exports thresher_handler_abi_version instead and exports handle:
//
//   export { thresher_handler_abi_version } from "thresher-guest";
//   export function handle(reqLen: i32): i32 { const req = Request.read(reqLen); ... call(...) ... http.body(...) }
//
// and builds with  asc assembly/index.ts --path <dir holding thresher-guest> --use abort=thresher-guest/abort
// so that a failed assertion ends the invocation through fail() instead of importing env.abort.
// A batch is read over the previous one: text() and bytes() copy out of it; keep those, not the batch.

export const ABI_VERSION: i32 = 2;

export function thresher_abi_version(): i32 {
  return ABI_VERSION;
}

export const HANDLER_ABI_VERSION: i32 = 1;

export function thresher_handler_abi_version(): i32 {
  return HANDLER_ABI_VERSION;
}

// ---- the host's imports ----------------------------------------------------------------------------

@external("thresher", "emit") declare function hostEmit(key: usize, keyLen: i32, value: f64): i32;
@external("thresher", "fail") declare function hostFail(msg: usize, msgLen: i32): void;
@external("thresher", "json_begin_object") declare function hostBeginObject(): void;
@external("thresher", "json_end_object") declare function hostEndObject(): void;
@external("thresher", "json_begin_array") declare function hostBeginArray(): void;
@external("thresher", "json_end_array") declare function hostEndArray(): void;
@external("thresher", "json_key") declare function hostKey(ptr: usize, len: i32): void;
@external("thresher", "json_string") declare function hostString(ptr: usize, len: i32): void;
@external("thresher", "json_number") declare function hostNumber(value: f64): void;
@external("thresher", "json_integer") declare function hostInteger(value: i64): void;
@external("thresher", "json_bool") declare function hostBool(value: i32): void;
@external("thresher", "json_null") declare function hostNull(): void;
@external("thresher", "http_status") declare function hostHttpStatus(status: i32): void;
@external("thresher", "http_header") declare function hostHttpHeader(name: usize, nameLen: i32, value: usize, valueLen: i32): void;
@external("thresher", "http_body") declare function hostHttpBody(ptr: usize, len: i32): void;
@external("thresher", "call") declare function hostCall(descriptor: usize, descriptorLen: i32, args: usize, argsLen: i32): i32;
@external("thresher", "call_result_len") declare function hostCallResultLen(): i32;
@external("wasi_snapshot_preview1", "fd_read") declare function fdRead(fd: i32, iovs: usize, n: i32, nread: usize): i32;
@external("wasi_snapshot_preview1", "fd_write") declare function fdWrite(fd: i32, iovs: usize, n: i32, nwritten: usize): i32;

// ---- output ----------------------------------------------------------------------------------------

/** Adds the partial (key, value); false when refused (the emit budget: the run has failed, return at once). */
export function emit(key: string, value: f64): bool {
  const k = String.UTF8.encode(key);
  return hostEmit(changetype<usize>(k), k.byteLength, value) == 0;
}

/** Records why the invocation fails and returns 1, the status to return: `return fail("why");`. */
export function fail(message: string): i32 {
  const m = String.UTF8.encode(message);
  hostFail(changetype<usize>(m), m.byteLength);
  return 1;
}

/** Writes to stderr: shown with the failure when the invocation fails, dropped otherwise. */
export function log(message: string): void {
  const m = String.UTF8.encode(message);
  const io = memory.data(16);
  store<u32>(io, changetype<u32>(m));
  store<u32>(io, m.byteLength, 4);
  fdWrite(2, io, 1, io + 8);
}

/** The abort of AssemblyScript's runtime (`--use abort=thresher-guest/abort`): fails the invocation and traps. */
export function abort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  fail((message !== null ? message : "abort") + " at " + (fileName !== null ? fileName : "?") + ":"
    + line.toString() + ":" + column.toString());
  unreachable();
}

/** The result writer of reduce: one JSON value, written as its shape goes (docs/guest-abi.md section 3). */
export namespace json {
  export function beginObject(): void { hostBeginObject(); }
  export function endObject(): void { hostEndObject(); }
  export function beginArray(): void { hostBeginArray(); }
  export function endArray(): void { hostEndArray(); }
  export function key(key: String): void {
    const k = String.UTF8.encode(key);
    hostKey(changetype<usize>(k), k.byteLength);
  }
  export function string(value: String): void {
    const v = String.UTF8.encode(value);
    hostString(changetype<usize>(v), v.byteLength);
  }
  /** A finite number (the host refuses NaN and infinities); integer() for integers. */
  export function number(value: f64): void { hostNumber(value); }
  export function integer(value: i64): void { hostInteger(value); }
  export function boolean(value: bool): void { hostBool(value ? 1 : 0); }
  export function nil(): void { hostNull(); }
}

// ---- input: fd 0 -----------------------------------------------------------------------------------

/** Reads exactly n bytes of fd 0 to dst; false when the input ended first. */
function readExact(dst: usize, n: u32): bool {
  const io = memory.data(16);
  let got: u32 = 0;
  while (got < n) {
    store<u32>(io, <u32>(dst + got));
    store<u32>(io, n - got, 4);
    if (fdRead(0, io, 1, io + 8) != 0) return false;
    const r = load<u32>(io, 8);
    if (r == 0) return false;
    got += r;
  }
  return true;
}

/** Reads the call's arguments, JSON text as the caller sent it (run: first; reduce: after the partials). */
export function readArgs(argsLen: i32): string | null {
  const buf = new ArrayBuffer(argsLen);
  if (!readExact(changetype<usize>(buf), <u32>argsLen)) return null;
  return String.UTF8.decode(buf);
}

// ---- row batches (docs/guest-abi.md section 4) -----------------------------------------------------

export enum Type { Int64 = 1, Float64 = 2, Text = 3, Bool = 4, Bytes = 5 }

function pad8(n: u32): u32 { return (n + 7) & ~7; }

/** A column of a batch: its layout, and where its sections are (offsets into the batch). */
export class Column {
  type: Type = Type.Int64;
  nullable: bool = false;
  name: string = "";
  nulls: u32 = 0;
  data: u32 = 0;
  payload: u32 = 0;
}

/** One row batch, over the input buffer: read the next one and this one is gone. */
export class Batch {
  partition: u32 = 0;
  rows: u32 = 0;
  columns: Column[] = [];
  private base: usize = 0;

  /** Decodes the batch of len bytes at ptr; null when it is malformed. */
  static parse(ptr: usize, len: u32): Batch | null {
    if (len < 16 || load<u32>(ptr) != 0x31425254) return null;
    const b = new Batch();
    b.base = ptr;
    b.partition = load<u32>(ptr, 4);
    b.rows = load<u32>(ptr, 8);
    const count = load<u32>(ptr, 12);
    let at: u32 = 16;
    for (let c: u32 = 0; c < count; c++) {
      if (at + 4 > len) return null;
      const col = new Column();
      const tag = load<u8>(ptr + at);
      if (tag < 1 || tag > 5) return null;
      col.type = <Type>tag;
      col.nullable = (load<u8>(ptr + at + 1) & 1) == 1;
      const nameLen = <u32>load<u16>(ptr + at + 2);
      if (at + 4 + nameLen > len) return null;
      col.name = String.UTF8.decodeUnsafe(ptr + at + 4, nameLen);
      at += 4 + nameLen;
      b.columns.push(col);
    }
    at = pad8(at);
    const r = b.rows;
    for (let c = 0; c < b.columns.length; c++) {
      const col = b.columns[c];
      if (col.nullable) {
        col.nulls = at;
        at += pad8((r + 7) / 8);
      }
      col.data = at;
      if (col.type == Type.Int64 || col.type == Type.Float64) {
        at += 8 * r;
      } else if (col.type == Type.Bool) {
        at += pad8(r);
      } else {
        const table = at;
        at += pad8(4 * (r + 1));
        if (table + 4 * (r + 1) > len) return null;
        col.payload = at;
        at += pad8(load<u32>(ptr + table + 4 * r));
      }
      if (at > len) return null;
    }
    return at == len ? b : null;
  }

  /** The index of the column named name, or -1. */
  column(name: string): i32 {
    for (let c = 0; c < this.columns.length; c++) if (this.columns[c].name == name) return c;
    return -1;
  }

  /** Whether column c is named name with this type and nullability: check the layout your selector fixes. */
  is(c: i32, name: string, type: Type, nullable: bool): bool {
    return c < this.columns.length && this.columns[c].type == type && this.columns[c].nullable == nullable
      && this.columns[c].name == name;
  }

  isNull(c: i32, row: u32): bool {
    const col = this.columns[c];
    return col.nullable && ((load<u8>(this.base + col.nulls + (row >> 3)) >> (row & 7)) & 1) == 1;
  }
  int64(c: i32, row: u32): i64 { return load<i64>(this.base + this.columns[c].data + 8 * row); }
  float64(c: i32, row: u32): f64 { return load<f64>(this.base + this.columns[c].data + 8 * row); }
  boolean(c: i32, row: u32): bool { return load<u8>(this.base + this.columns[c].data + row) != 0; }

  /** Where a text or bytes value is (pointer) and how long: read without copying, while the batch lasts. */
  valuePtr(c: i32, row: u32): usize {
    const col = this.columns[c];
    return this.base + col.payload + load<u32>(this.base + col.data + 4 * row);
  }
  valueLen(c: i32, row: u32): u32 {
    const col = this.columns[c];
    return load<u32>(this.base + col.data + 4 * (row + 1)) - load<u32>(this.base + col.data + 4 * row);
  }
  /** A text value, copied out of the batch. */
  text(c: i32, row: u32): string { return String.UTF8.decodeUnsafe(this.valuePtr(c, row), this.valueLen(c, row)); }
  /** A bytes value, copied out of the batch. */
  bytes(c: i32, row: u32): Uint8Array {
    const n = this.valueLen(c, row);
    const out = new Uint8Array(n);
    memory.copy(out.dataStart, this.valuePtr(c, row), n);
    return out;
  }
}

// ---- paged input (docs/guest-abi.md section 4a) ----------------------------------------------------

/** The partition as it comes: one batch after another, each read over the last. */
export class Input {
  private buf: ArrayBuffer = new ArrayBuffer(0);
  failed: bool = false;
  private ended: bool = false;

  /** The next batch, or null at the end of the partition or when the input could not be read (failed tells). */
  nextBatch(): Batch | null {
    if (this.ended || this.failed) return null;
    const lenAt = memory.data(8);
    if (!readExact(lenAt, 4)) { this.failed = true; return null; }
    const len = load<u32>(lenAt);
    if (len == 0) { this.ended = true; return null; }
    if (<u32>this.buf.byteLength < len) this.buf = new ArrayBuffer(len);
    const ptr = changetype<usize>(this.buf);
    if (!readExact(ptr, len)) { this.failed = true; return null; }
    const b = Batch.parse(ptr, len);
    if (b === null) this.failed = true;
    return b;
  }
}

// ---- partials (docs/guest-abi.md section 5) --------------------------------------------------------

/** The merged partials reduce reads, in the order the coordinator passes them. */
export class Partials {
  key: string = "";
  value: f64 = 0;
  private at: u32 = 8;
  private left: u32;

  constructor(private buf: ArrayBuffer, public count: u32) {
    this.left = count;
  }

  /** Moves to the next partial (key, value); false when there are no more. */
  next(): bool {
    const base = changetype<usize>(this.buf);
    const len = <u32>this.buf.byteLength;
    if (this.left == 0 || this.at + 4 > len) return false;
    const k = load<u32>(base + this.at);
    if (this.at + 4 + k + 8 > len) return false;
    this.key = String.UTF8.decodeUnsafe(base + this.at + 4, k);
    this.value = load<f64>(base + this.at + 4 + k);
    this.at += 4 + k + 8;
    this.left--;
    return true;
  }
}

/** Reads the partials of reduce(partialsLen, ...); null when they are malformed or the input ended. */
export function readPartials(partialsLen: i32): Partials | null {
  const buf = new ArrayBuffer(partialsLen);
  const ptr = changetype<usize>(buf);
  if (!readExact(ptr, <u32>partialsLen) || partialsLen < 8 || load<u32>(ptr) != 0x314c5054) return null;
  const count = load<u32>(ptr, 4);
  if (count > (<u32>partialsLen - 8) / 12) return null;
  return new Partials(buf, count);
}

// ---- HTTP handlers (docs/guest-abi.md section 8) ---------------------------------------------------

/** A name and a value of the request: a path parameter, a query parameter or a header. */
export class Pair {
  constructor(public name: string, public value: string) {}
}

/** The request handle(reqLen) reads (HTTP request v1), copied out of the input. */
export class Request {
  /** The matched route's place in the manifest's http.routes, from 0. */
  route: u32 = 0;
  method: string = "";
  /** Below /v1/http/<binding>, as received (percent-encoded). */
  path: string = "";
  /** The matched route's path pattern, as declared. */
  pattern: string = "";
  /** Path parameters, decoded, in pattern order. */
  params: Pair[] = [];
  /** Query parameters, decoded, in request order. */
  query: Pair[] = [];
  /** The headers given, names lower-case; a value's characters are its bytes (ISO-8859-1). */
  headers: Pair[] = [];
  body: Uint8Array = new Uint8Array(0);

  private static at: u32 = 0;

  private static str(base: usize, len: u32, latin1: bool): string | null {
    const at = Request.at;
    if (at + 4 > len) return null;
    const n = load<u32>(base + at);
    if (n > len - at - 4) return null;
    Request.at = at + 4 + n;
    if (!latin1) return String.UTF8.decodeUnsafe(base + at + 4, n);
    let s = "";
    for (let i: u32 = 0; i < n; i++) s += String.fromCharCode(load<u8>(base + at + 4 + i));
    return s;
  }

  private static pairs(base: usize, len: u32, latin1: bool): Pair[] | null {
    if (Request.at + 4 > len) return null;
    const n = load<u32>(base + Request.at);
    Request.at += 4;
    const out: Pair[] = [];
    for (let i: u32 = 0; i < n; i++) {
      const name = Request.str(base, len, false);
      if (name === null) return null;
      const value = Request.str(base, len, latin1);
      if (value === null) return null;
      out.push(new Pair(name, value));
    }
    return out;
  }

  /** Reads the request from fd 0; null when it is malformed or the input ended. */
  static read(reqLen: i32): Request | null {
    const buf = new ArrayBuffer(reqLen);
    const base = changetype<usize>(buf);
    const len = <u32>reqLen;
    if (!readExact(base, len) || len < 8 || load<u32>(base) != 0x31514854) return null;
    const r = new Request();
    r.route = load<u32>(base, 4);
    Request.at = 8;
    const method = Request.str(base, len, false);
    if (method === null) return null;
    r.method = method;
    const path = Request.str(base, len, false);
    if (path === null) return null;
    r.path = path;
    const pattern = Request.str(base, len, false);
    if (pattern === null) return null;
    r.pattern = pattern;
    const params = Request.pairs(base, len, false);
    if (params === null) return null;
    r.params = params;
    const query = Request.pairs(base, len, false);
    if (query === null) return null;
    r.query = query;
    const headers = Request.pairs(base, len, true);
    if (headers === null) return null;
    r.headers = headers;
    if (Request.at + 4 > len) return null;
    const n = load<u32>(base + Request.at);
    if (n != len - Request.at - 4) return null;
    r.body = new Uint8Array(n);
    memory.copy(r.body.dataStart, base + Request.at + 4, n);
    return r;
  }

  private static find(list: Pair[], name: string): string | null {
    for (let i = 0; i < list.length; i++) if (list[i].name == name) return list[i].value;
    return null;
  }

  /** A path parameter, decoded. */
  param(name: string): string | null { return Request.find(this.params, name); }
  /** The first query parameter of that name, decoded. */
  queryValue(name: string): string | null { return Request.find(this.query, name); }
  /** The first header of that (lower-case) name. */
  header(name: string): string | null { return Request.find(this.headers, name); }
}

/** The response: status (200 unless set; the last call wins), headers in order, the body appended piece by piece. */
export namespace http {
  export function status(status: i32): void { hostHttpStatus(status); }
  export function header(name: string, value: string): void {
    const n = String.UTF8.encode(name);
    const v = String.UTF8.encode(value);
    hostHttpHeader(changetype<usize>(n), n.byteLength, changetype<usize>(v), v.byteLength);
  }
  export function body(bytes: Uint8Array): void { hostHttpBody(bytes.dataStart, bytes.byteLength); }
  export function bodyString(text: string): void {
    const b = String.UTF8.encode(text);
    hostHttpBody(changetype<usize>(b), b.byteLength);
  }
  /** Appends text to the body as a JSON string: quoted, with " \\ and control characters escaped. */
  export function bodyJsonString(text: string): void {
    let out = "\"";
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c == 0x22) out += "\\\"";
      else if (c == 0x5c) out += "\\\\";
      else if (c < 0x20) out += "\\u00" + (c < 16 ? "0" : "") + c.toString(16);
      else out += String.fromCharCode(c);
    }
    bodyString(out + "\"");
  }
}

/** The outcome of a nested call: code 0 and the result JSON, or the failure's error code and its error object. */
export class CallOutcome {
  constructor(public code: i32, public text: string) {}
}

/**
 * Runs one distributed call of a binding ("name", or "name@version" to require that version) and waits for it,
 * within the request's deadline. A request makes one call (limits.nestedCallsPerRequest); the next fails 3012
 * (NESTED_CALL_LIMIT_EXCEEDED). Returning a failure's code from handle fails the request as the call failed.
 */
export function call(descriptor: string, args: string): CallOutcome {
  const d = String.UTF8.encode(descriptor);
  const a = String.UTF8.encode(args);
  const code = hostCall(changetype<usize>(d), d.byteLength, changetype<usize>(a), a.byteLength);
  const n = hostCallResultLen();
  const buf = new ArrayBuffer(n);
  const text = readExact(changetype<usize>(buf), <u32>n) ? String.UTF8.decode(buf) : "";
  return new CallOutcome(code, text);
}
