// request_probe: the AssemblyScript SDK's view of the HTTP request it is given, as its response body, so a test can
// hold it against the host's own decoding of the golden request vectors (tests: GuestSdksIT); the same view as
// sdk/c/tests/request_probe.c.
import { fail, http, Pair, Request } from "thresher-guest";
export { thresher_handler_abi_version } from "thresher-guest";

function hex(bytes: Uint8Array): string {
  const digits = "0123456789abcdef";
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += digits.charAt(bytes[i] >> 4) + digits.charAt(bytes[i] & 15);
  return s;
}

function utf8(s: string): Uint8Array {
  return Uint8Array.wrap(String.UTF8.encode(s));
}

/** A header value's characters are its bytes. */
function latin1(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = <u8>s.charCodeAt(i);
  return out;
}

function pairs(what: string, list: Pair[], bytes: (s: string) => Uint8Array): string {
  let s = "";
  for (let i = 0; i < list.length; i++) s += what + " " + list[i].name + " " + hex(bytes(list[i].value)) + "\n";
  return s;
}

export function handle(reqLen: i32): i32 {
  const r = Request.read(reqLen);
  if (r === null) return fail("the request could not be read");
  http.bodyString("route " + r.route.toString() + "\nmethod " + r.method + "\npath " + r.path + "\npattern " + r.pattern
    + "\n" + pairs("param", r.params, utf8) + pairs("query", r.query, utf8) + pairs("header", r.headers, latin1)
    + "body " + hex(r.body) + "\n");
  return 0;
}
