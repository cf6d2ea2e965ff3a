//! revenue_by_region in Rust: revenue sum and order count per region, as examples/revenue_by_region does in
//! WebAssembly text, with the same partials and the same result.
//!
//! Bound with the selector `SELECT region, amount FROM orders` (region text not null, amount float8 not null).
//! * run: per region of the partition, emits `p<partition>/<region>/sum` = sum of amount and
//!   `p<partition>/<region>/count` = number of rows;
//! * reduce: adds the partials up per region: `{"<region>": {"sum": <number>, "count": <integer>}, ...}`,
//!   regions in ascending byte order.

use thresher_guest::{emit, fail, json, read_args, read_partials, Input, Type};

thresher_guest::export_abi_version!();

/// Regions in the order first seen, each with its sum and count.
struct Regions(Vec<(String, f64, f64)>);

impl Regions {
    fn at(&mut self, name: &str) -> &mut (String, f64, f64) {
        let i = match self.0.iter().position(|r| r.0 == name) {
            Some(i) => i,
            None => {
                self.0.push((name.to_owned(), 0.0, 0.0)); // copied: the batch it came in is read over
                self.0.len() - 1
            }
        };
        &mut self.0[i]
    }
}

#[no_mangle]
pub extern "C" fn run(args_len: i32) -> i32 {
    if let Err(e) = read_args(args_len as u32) {
        return fail(&e);
    }
    let mut input = Input::new();
    let mut regions = Regions(Vec::new());
    let mut partition = 0;
    while let Some(batch) = input.next_batch() {
        if batch.columns().len() != 2 || !batch.is(0, "region", Type::Text, false) || !batch.is(1, "amount", Type::Float64, false) {
            return fail("batch is not TRB1 with columns region TEXT NOT NULL, amount FLOAT64 NOT NULL");
        }
        partition = batch.partition();
        for row in 0..batch.rows() {
            let r = regions.at(batch.text(0, row));
            r.1 += batch.float64(1, row);
            r.2 += 1.0;
        }
    }
    if input.failed() {
        return fail("input ended before the announced length");
    }
    for (name, sum, count) in &regions.0 {
        if emit(&format!("p{}/{}/sum", partition, name), *sum).is_err()
            || emit(&format!("p{}/{}/count", partition, name), *count).is_err()
        {
            return fail("emit refused");
        }
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
    let mut regions = Regions(Vec::new());
    while let Some((key, value)) = partials.next() {
        let (first, last) = match (key.find('/'), key.rfind('/')) {
            (Some(f), Some(l)) if l > f => (f, l),
            _ => return fail("a partial key is not p<partition>/<region>/<sum|count>"),
        };
        let r = regions.at(&key[first + 1..last]);
        match &key[last + 1..] {
            "sum" => r.1 += value,
            "count" => r.2 += value,
            _ => return fail("a partial key is not p<partition>/<region>/<sum|count>"),
        }
    }
    regions.0.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    json::begin_object();
    for (name, sum, count) in &regions.0 {
        json::key(name);
        json::begin_object();
        json::key("sum");
        json::number(*sum);
        json::key("count");
        json::integer(*count as i64);
        json::end_object();
    }
    json::end_object();
    0
}
