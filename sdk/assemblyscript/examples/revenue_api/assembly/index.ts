// revenue_api in AssemblyScript: an HTTP handler over the sample binding revenue_by_region, as the C example
// sdk/c/examples/revenue_api does. Each request makes one distributed call of revenue_by_region:
//
//   GET /v1/http/revenue_api_as/revenue                   the whole result, as the call answers it
//   GET /v1/http/revenue_api_as/regions/{region}/revenue  that region's {"sum": ..., "count": ...}; 404 when absent
//
// A failed call fails the request with the call's own error (the handler returns its code).
import { call, fail, http, Request } from "thresher-guest";
export { thresher_handler_abi_version } from "thresher-guest";

/** In the JSON object json, the text of the value of its top-level key named key, or null. */
function member(json: string, key: string): string | null {
  let depth = 0;
  let i = 0;
  while (i < json.length) {
    const c = json.charCodeAt(i);
    if (c == 0x22) {
      const start = i + 1;
      i = start;
      while (i < json.length && json.charCodeAt(i) != 0x22) i += json.charCodeAt(i) == 0x5c ? 2 : 1;
      if (i >= json.length) return null;
      const name = json.substring(start, i);
      i++;
      if (depth == 1 && i < json.length && json.charCodeAt(i) == 0x3a && name == key) {
        const v = i + 1;
        let j = v;
        let d = 0;
        let inString = false;
        for (; j < json.length; j++) {
          const x = json.charCodeAt(j);
          if (inString) {
            if (x == 0x5c) j++;
            else if (x == 0x22) inString = false;
          } else if (x == 0x22) inString = true;
          else if (x == 0x7b || x == 0x5b) d++;
          else if (x == 0x7d || x == 0x5d) {
            if (d == 0) break;
            d--;
          } else if (x == 0x2c && d == 0) break;
        }
        return json.substring(v, j);
      }
      continue;
    }
    if (c == 0x7b || c == 0x5b) depth++;
    else if (c == 0x7d || c == 0x5d) depth--;
    i++;
  }
  return null;
}

export function handle(reqLen: i32): i32 {
  const req = Request.read(reqLen);
  if (req === null) return fail("the request could not be read");
  const result = call("revenue_by_region", "{}");
  if (result.code != 0) return result.code; // the request fails as the call did
  http.header("content-type", "application/json");
  if (req.route == 0) {
    http.bodyString(result.text);
    return 0;
  }
  const region = req.param("region");
  if (region === null) return fail("route 1 has a {region}");
  const value = member(result.text, region);
  if (value === null) {
    http.status(404);
    http.bodyString("{\"error\": {\"message\": \"no revenue for this region\", \"region\": ");
    http.bodyJsonString(region);
    http.bodyString("}}");
  } else {
    http.bodyString(value);
  }
  return 0;
}
