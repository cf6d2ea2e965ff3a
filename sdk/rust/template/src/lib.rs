//! A Thresher component in Rust: copy this directory, rename the binding in thresher.json, write run and reduce.
//!
//! This one counts rows: run emits `p<partition>/rows` = the partition's row count; reduce writes `{"rows": <total>}`.
//! Build: `make` (Debian's rustc with libstd-rust-dev-wasm32) or `cargo build --release --target wasm32-unknown-unknown`.
//! Try it: `./thresher component test . --csv rows.csv --partitions 4`

use thresher_guest::{emit, fail, json, read_args, read_partials, Input};

thresher_guest::export_abi_version!();

#[no_mangle]
pub extern "C" fn run(args_len: i32) -> i32 {
    if let Err(e) = read_args(args_len as u32) {
        return fail(&e);
    }
    let mut input = Input::new();
    let (mut partition, mut rows) = (0, 0.0);
    while let Some(batch) = input.next_batch() {
        // a partition of any size comes as one batch after another
        partition = batch.partition();
        rows += batch.rows() as f64;
    }
    if input.failed() {
        return fail("a batch could not be read");
    }
    // keys are unique across partitions
    if emit(&format!("p{}/rows", partition), rows).is_err() {
        return fail("emit refused");
    }
    0
}

#[no_mangle]
pub extern "C" fn reduce(partials_len: i32, args_len: i32) -> i32 {
    let mut partials = match read_partials(partials_len as u32) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    if let Err(e) = read_args(args_len as u32) {
        return fail(&e);
    }
    let mut total = 0.0;
    while let Some((_key, value)) = partials.next() {
        total += value;
    }
    json::begin_object();
    json::key("rows");
    json::integer(total as i64);
    json::end_object();
    0
}
