//! batch_probe: the Rust SDK's view of the row batches it is given, as partials, so a test can hold it against
//! the host's own decoding of the golden vectors (tests: GuestSdksIT); the same view as sdk/c/tests/batch_probe.c.

use thresher_guest::{emit, fail, json, read_args, Input, Type};

thresher_guest::export_abi_version!();

fn fnv(mut h: u32, bytes: &[u8]) -> u32 {
    for b in bytes {
        h ^= *b as u32;
        h = h.wrapping_mul(16777619);
    }
    h
}

#[no_mangle]
pub extern "C" fn run(args_len: i32) -> i32 {
    if let Err(e) = read_args(args_len as u32) {
        return fail(&e);
    }
    let mut input = Input::new();
    let mut batches = 0;
    while let Some(b) = input.next_batch() {
        batches += 1;
        if batches > 1 {
            continue;
        }
        let _ = emit("partition", b.partition() as f64);
        let _ = emit("rows", b.rows() as f64);
        let _ = emit("columns", b.columns().len() as f64);
        for (c, col) in b.columns().iter().enumerate() {
            let (mut nulls, mut h) = (0u32, 2166136261u32);
            for r in 0..b.rows() {
                if b.is_null(c, r) {
                    nulls += 1;
                    h = fnv(h, &[0xFF]);
                    continue;
                }
                h = match col.ty {
                    Type::Int64 => fnv(h, &b.int64(c, r).to_le_bytes()),
                    Type::Float64 => fnv(h, &b.float64(c, r).to_bits().to_le_bytes()),
                    Type::Bool => fnv(h, &[b.boolean(c, r) as u8]),
                    Type::Text | Type::Bytes => {
                        let v = b.bytes(c, r);
                        fnv(fnv(h, &(v.len() as u32).to_le_bytes()), v)
                    }
                };
            }
            let _ = emit(&format!("c{}/type", c), col.ty as i32 as f64);
            let _ = emit(&format!("c{}/nullable", c), if col.nullable { 1.0 } else { 0.0 });
            let _ = emit(&format!("c{}/name", c), fnv(2166136261, b.name(c).as_bytes()) as f64);
            let _ = emit(&format!("c{}/nulls", c), nulls as f64);
            let _ = emit(&format!("c{}/values", c), h as f64);
        }
    }
    if input.failed() {
        return fail("a batch could not be read");
    }
    let _ = emit("batches", batches as f64);
    0
}

#[no_mangle]
pub extern "C" fn reduce(_partials_len: i32, _args_len: i32) -> i32 {
    json::begin_object();
    json::end_object();
    0
}
