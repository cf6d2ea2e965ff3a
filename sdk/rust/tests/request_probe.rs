//! request_probe: the Rust SDK's view of the HTTP request it is given, as its response body, so a test can hold it
//! against the host's own decoding of the golden request vectors (tests: GuestSdksIT); the same view as
//! sdk/c/tests/request_probe.c.

use thresher_guest::{fail, http};

thresher_guest::export_handler_abi_version!();

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{:02x}", b)).collect()
}

#[no_mangle]
pub extern "C" fn handle(req_len: i32) -> i32 {
    let r = match http::Request::read(req_len as u32) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let mut out = format!("route {}\nmethod {}\npath {}\npattern {}\n", r.route(), r.method(), r.path(), r.pattern());
    for (name, value) in r.params() {
        out.push_str(&format!("param {} {}\n", name, hex(value.as_bytes())));
    }
    for (name, value) in r.query_pairs() {
        out.push_str(&format!("query {} {}\n", name, hex(value.as_bytes())));
    }
    for (name, value) in r.headers() {
        out.push_str(&format!("header {} {}\n", name, hex(value)));
    }
    out.push_str(&format!("body {}\n", hex(r.body())));
    http::body(out.as_bytes());
    0
}
