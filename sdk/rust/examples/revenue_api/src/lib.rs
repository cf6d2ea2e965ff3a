//! revenue_api in Rust: an HTTP handler over the sample binding revenue_by_region, as the C example
//! sdk/c/examples/revenue_api does. Each request makes one distributed call of revenue_by_region:
//!
//! * `GET /v1/http/revenue_api_rust/revenue`: the whole result, as the call answers it;
//! * `GET /v1/http/revenue_api_rust/regions/{region}/revenue`: that region's `{"sum": ..., "count": ...}`, 404 when absent.
//!
//! A failed call fails the request with the call's own error (the handler returns its code).

use thresher_guest::{fail, http};

thresher_guest::export_handler_abi_version!();

/// In the JSON object `json`, the text of the value of its top-level key `key`.
fn member<'a>(json: &'a str, key: &str) -> Option<&'a str> {
    let b = json.as_bytes();
    let (mut i, mut depth) = (0usize, 0i32);
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i + 1;
                i = start;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if i >= b.len() {
                    return None;
                }
                let name = &json[start..i];
                i += 1;
                if depth == 1 && i < b.len() && b[i] == b':' && name == key {
                    let v = i + 1;
                    let (mut j, mut d, mut in_string) = (v, 0i32, false);
                    while j < b.len() {
                        let c = b[j];
                        if in_string {
                            if c == b'\\' {
                                j += 1;
                            } else if c == b'"' {
                                in_string = false;
                            }
                        } else if c == b'"' {
                            in_string = true;
                        } else if c == b'{' || c == b'[' {
                            d += 1;
                        } else if c == b'}' || c == b']' {
                            if d == 0 {
                                break;
                            }
                            d -= 1;
                        } else if c == b',' && d == 0 {
                            break;
                        }
                        j += 1;
                    }
                    return Some(&json[v..j]);
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

#[no_mangle]
pub extern "C" fn handle(req_len: i32) -> i32 {
    let req = match http::Request::read(req_len as u32) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let result = match http::call("revenue_by_region", "{}") {
        Ok(r) => r,
        Err(e) => return e.code, // the request fails as the call did
    };
    http::header("content-type", "application/json");
    if req.route() == 0 {
        http::body(result.as_bytes());
        return 0;
    }
    let region = match req.param("region") {
        Some(r) => r,
        None => return fail("route 1 has a {region}"),
    };
    match member(&result, region) {
        Some(v) => http::body(v.as_bytes()),
        None => {
            http::status(404);
            http::body(b"{\"error\": {\"message\": \"no revenue for this region\", \"region\": ");
            http::body_json_string(region);
            http::body(b"}}");
        }
    }
    0
}
