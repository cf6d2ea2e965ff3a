//! The Thresher guest SDK for Rust: guest ABI 2 (docs/guest-abi.md), for `wasm32-unknown-unknown`.
//!
//! The names match the C header and the AssemblyScript library:
//!
//! * `run`: [`read_args`], [`Input::next_batch`], the [`Batch`] accessors, [`emit`], [`fail`], [`log`];
//! * `reduce`: [`read_partials`], [`Partials::next`], [`read_args`], the [`json`] writer, [`fail`].
//!
//! A component exports `run` and `reduce` itself and declares the ABI with [`export_abi_version!`]:
//!
//! ```ignore
//! thresher_guest::export_abi_version!();
//!
//! #[no_mangle]
//! pub extern "C" fn run(args_len: i32) -> i32 {
//!     let _args = match thresher_guest::read_args(args_len as u32) { Ok(a) => a, Err(e) => return thresher_guest::fail(&e) };
//!     let mut input = thresher_guest::Input::new();
//!     while let Some(batch) = input.next_batch() { /* batch.rows(), batch.float64(1, row), ... */ }
//!     0
//! }
//! ```
//!
//! An HTTP handler (docs/guest-abi.md section 8) exports `handle` itself, declares its ABI with
//! [`export_handler_abi_version!`] and uses the [`http`] module: [`http::Request::read`], [`http::call`],
//! [`http::status`], [`http::header`], [`http::body`].
//!
//! A batch is read over the previous one: what must outlive it has to be copied (`to_owned`).
//! Build with Debian's `rustc` and `libstd-rust-dev-wasm32` (docs/components.md).

use std::str;

/// The guest ABI version this crate speaks.
pub const ABI_VERSION: i32 = 2;

/// The HTTP handler ABI version this crate speaks.
pub const HANDLER_ABI_VERSION: i32 = 1;

#[link(wasm_import_module = "thresher")]
extern "C" {
    #[link_name = "emit"]
    fn host_emit(key: *const u8, key_len: i32, value: f64) -> i32;
    #[link_name = "fail"]
    fn host_fail(msg: *const u8, msg_len: i32);
    #[link_name = "json_begin_object"]
    fn host_json_begin_object();
    #[link_name = "json_end_object"]
    fn host_json_end_object();
    #[link_name = "json_begin_array"]
    fn host_json_begin_array();
    #[link_name = "json_end_array"]
    fn host_json_end_array();
    #[link_name = "json_key"]
    fn host_json_key(ptr: *const u8, len: i32);
    #[link_name = "json_string"]
    fn host_json_string(ptr: *const u8, len: i32);
    #[link_name = "json_number"]
    fn host_json_number(value: f64);
    #[link_name = "json_integer"]
    fn host_json_integer(value: i64);
    #[link_name = "json_bool"]
    fn host_json_bool(value: i32);
    #[link_name = "json_null"]
    fn host_json_null();
    #[link_name = "http_status"]
    fn host_http_status(status: i32);
    #[link_name = "http_header"]
    fn host_http_header(name: *const u8, name_len: i32, value: *const u8, value_len: i32);
    #[link_name = "http_body"]
    fn host_http_body(ptr: *const u8, len: i32);
    #[link_name = "call"]
    fn host_call(descriptor: *const u8, descriptor_len: i32, args: *const u8, args_len: i32) -> i32;
    #[link_name = "call_result_len"]
    fn host_call_result_len() -> i32;
}

#[repr(C)]
struct IoVec {
    buf: *mut u8,
    len: u32,
}

#[link(wasm_import_module = "wasi_snapshot_preview1")]
extern "C" {
    fn fd_read(fd: i32, iovs: *mut IoVec, n: i32, nread: *mut u32) -> i32;
    fn fd_write(fd: i32, iovs: *const IoVec, n: i32, nwritten: *mut u32) -> i32;
}

/// Exports `thresher_abi_version`, returning [`ABI_VERSION`]: put it once in the component's crate.
#[macro_export]
macro_rules! export_abi_version {
    () => {
        #[no_mangle]
        pub extern "C" fn thresher_abi_version() -> i32 {
            $crate::ABI_VERSION
        }
    };
}

/// Exports `thresher_handler_abi_version`, returning [`HANDLER_ABI_VERSION`]: put it once in an HTTP handler's crate
/// (instead of [`export_abi_version!`]).
#[macro_export]
macro_rules! export_handler_abi_version {
    () => {
        #[no_mangle]
        pub extern "C" fn thresher_handler_abi_version() -> i32 {
            $crate::HANDLER_ABI_VERSION
        }
    };
}

// ---- output -----------------------------------------------------------------------------------------

/// The host refused a partial: the run made its budget of emits and **has failed**; return at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused;

/// Adds the partial `(key, value)`. Keys must be unique across partitions: prefix them with the partition.
pub fn emit(key: &str, value: f64) -> Result<(), Refused> {
    if unsafe { host_emit(key.as_ptr(), key.len() as i32, value) } == 0 {
        Ok(())
    } else {
        Err(Refused)
    }
}

/// Records why the invocation fails and returns 1, the status to return: `return fail("why");`.
pub fn fail(message: &str) -> i32 {
    unsafe { host_fail(message.as_ptr(), message.len() as i32) };
    1
}

/// Writes to stderr: shown with the failure when the invocation fails, dropped otherwise.
pub fn log(message: &str) {
    let v = IoVec { buf: message.as_ptr() as *mut u8, len: message.len() as u32 };
    let mut n = 0u32;
    unsafe { fd_write(2, &v, 1, &mut n) };
}

/// The result writer of `reduce`: one JSON value, written as its shape goes (docs/guest-abi.md section 3).
pub mod json {
    pub fn begin_object() {
        unsafe { super::host_json_begin_object() }
    }
    pub fn end_object() {
        unsafe { super::host_json_end_object() }
    }
    pub fn begin_array() {
        unsafe { super::host_json_begin_array() }
    }
    pub fn end_array() {
        unsafe { super::host_json_end_array() }
    }
    pub fn key(key: &str) {
        unsafe { super::host_json_key(key.as_ptr(), key.len() as i32) }
    }
    pub fn string(value: &str) {
        unsafe { super::host_json_string(value.as_ptr(), value.len() as i32) }
    }
    /// A finite number (the host refuses NaN and infinities); [`integer`] for integers.
    pub fn number(value: f64) {
        unsafe { super::host_json_number(value) }
    }
    pub fn integer(value: i64) {
        unsafe { super::host_json_integer(value) }
    }
    pub fn boolean(value: bool) {
        unsafe { super::host_json_bool(value as i32) }
    }
    pub fn null() {
        unsafe { super::host_json_null() }
    }
}

// ---- input: fd 0 ------------------------------------------------------------------------------------

/// Reads exactly `buf.len()` bytes of fd 0; `false` when the input ended first.
fn read_exact(buf: &mut [u8]) -> bool {
    let mut got = 0usize;
    while got < buf.len() {
        let mut v = IoVec { buf: unsafe { buf.as_mut_ptr().add(got) }, len: (buf.len() - got) as u32 };
        let mut r = 0u32;
        if unsafe { fd_read(0, &mut v, 1, &mut r) } != 0 || r == 0 {
            return false;
        }
        got += r as usize;
    }
    true
}

/// Reads the call's arguments, JSON text as the caller sent it (`run`: first; `reduce`: after the partials).
pub fn read_args(args_len: u32) -> Result<String, String> {
    let mut buf = vec![0u8; args_len as usize];
    if !read_exact(&mut buf) {
        return Err("input ended before the arguments".to_string());
    }
    String::from_utf8(buf).map_err(|_| "the arguments are not UTF-8".to_string())
}

// ---- row batches (docs/guest-abi.md section 4) ---------------------------------------------------------

/// A column's type in a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Int64 = 1,
    Float64 = 2,
    Text = 3,
    Bool = 4,
    Bytes = 5,
}

/// A column of a batch: its layout, and where its sections are.
#[derive(Debug, Clone)]
pub struct Column {
    pub ty: Type,
    pub nullable: bool,
    name: (usize, usize),
    nulls: Option<usize>,
    data: usize,
    payload: usize,
}

/// One row batch, borrowed from the input buffer: read the next one and this one is gone.
pub struct Batch<'a> {
    bytes: &'a [u8],
    partition: u32,
    rows: u32,
    columns: Vec<Column>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn pad8(n: usize) -> usize {
    (n + 7) & !7
}

impl<'a> Batch<'a> {
    /// Decodes a batch; `None` when it is malformed.
    pub fn parse(bytes: &'a [u8]) -> Option<Batch<'a>> {
        if bytes.len() < 16 || &bytes[0..4] != b"TRB1" {
            return None;
        }
        let partition = u32_at(bytes, 4);
        let rows = u32_at(bytes, 8);
        let count = u32_at(bytes, 12) as usize;
        let mut at = 16usize;
        let mut columns = Vec::with_capacity(count.min(1024));
        for _ in 0..count {
            if at + 4 > bytes.len() {
                return None;
            }
            let ty = match bytes[at] {
                1 => Type::Int64,
                2 => Type::Float64,
                3 => Type::Text,
                4 => Type::Bool,
                5 => Type::Bytes,
                _ => return None,
            };
            let nullable = bytes[at + 1] & 1 == 1;
            let name_len = u16::from_le_bytes([bytes[at + 2], bytes[at + 3]]) as usize;
            columns.push(Column { ty, nullable, name: (at + 4, name_len), nulls: None, data: 0, payload: 0 });
            at += 4 + name_len;
        }
        at = pad8(at);
        let r = rows as usize;
        for col in columns.iter_mut() {
            if col.nullable {
                col.nulls = Some(at);
                at += pad8((r + 7) / 8);
            }
            col.data = at;
            match col.ty {
                Type::Int64 | Type::Float64 => at += 8 * r,
                Type::Bool => at += pad8(r),
                Type::Text | Type::Bytes => {
                    let table = at;
                    at += pad8(4 * (r + 1));
                    if table + 4 * (r + 1) > bytes.len() {
                        return None;
                    }
                    col.payload = at;
                    at += pad8(u32_at(bytes, table + 4 * r) as usize);
                }
            }
            if at > bytes.len() {
                return None;
            }
        }
        if at != bytes.len() || columns.iter().any(|c| c.name.0 + c.name.1 > bytes.len()) {
            return None;
        }
        Some(Batch { bytes, partition, rows, columns })
    }

    pub fn partition(&self) -> u32 {
        self.partition
    }
    pub fn rows(&self) -> u32 {
        self.rows
    }
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }
    /// The column's name.
    pub fn name(&self, column: usize) -> &'a str {
        let (at, len) = self.columns[column].name;
        str::from_utf8(&self.bytes[at..at + len]).unwrap_or("")
    }
    /// The index of the column named `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        (0..self.columns.len()).find(|&c| self.name(c) == name)
    }
    /// Whether column `column` is named `name` with this type and nullability: check the layout your selector fixes.
    pub fn is(&self, column: usize, name: &str, ty: Type, nullable: bool) -> bool {
        column < self.columns.len() && self.columns[column].ty == ty && self.columns[column].nullable == nullable
            && self.name(column) == name
    }
    pub fn is_null(&self, column: usize, row: u32) -> bool {
        match self.columns[column].nulls {
            Some(at) => (self.bytes[at + (row as usize >> 3)] >> (row & 7)) & 1 == 1,
            None => false,
        }
    }
    fn eight(&self, column: usize, row: u32) -> [u8; 8] {
        let at = self.columns[column].data + 8 * row as usize;
        let mut v = [0u8; 8];
        v.copy_from_slice(&self.bytes[at..at + 8]);
        v
    }
    pub fn int64(&self, column: usize, row: u32) -> i64 {
        i64::from_le_bytes(self.eight(column, row))
    }
    pub fn float64(&self, column: usize, row: u32) -> f64 {
        f64::from_le_bytes(self.eight(column, row))
    }
    pub fn boolean(&self, column: usize, row: u32) -> bool {
        self.bytes[self.columns[column].data + row as usize] != 0
    }
    /// Raw bytes of a text or bytes value.
    pub fn bytes(&self, column: usize, row: u32) -> &'a [u8] {
        let c = &self.columns[column];
        let from = u32_at(self.bytes, c.data + 4 * row as usize) as usize;
        let to = u32_at(self.bytes, c.data + 4 * (row as usize + 1)) as usize;
        &self.bytes[c.payload + from..c.payload + to]
    }
    /// A text value (the host sends UTF-8 only).
    pub fn text(&self, column: usize, row: u32) -> &'a str {
        str::from_utf8(self.bytes(column, row)).unwrap_or("")
    }
}

// ---- paged input (docs/guest-abi.md section 4a) ----------------------------------------------------------

/// The partition as it comes: one batch after another, each read over the last.
pub struct Input {
    buf: Vec<u8>,
    failed: bool,
    ended: bool,
}

impl Input {
    pub fn new() -> Input {
        Input { buf: Vec::new(), failed: false, ended: false }
    }

    /// The next batch, or `None` at the end of the partition or when the input could not be read
    /// ([`Input::failed`] tells which).
    pub fn next_batch(&mut self) -> Option<Batch<'_>> {
        if self.ended || self.failed {
            return None;
        }
        let mut len = [0u8; 4];
        if !read_exact(&mut len) {
            self.failed = true;
            return None;
        }
        let len = u32::from_le_bytes(len) as usize;
        if len == 0 {
            self.ended = true;
            return None;
        }
        self.buf.resize(len, 0);
        if !read_exact(&mut self.buf) {
            self.failed = true;
            return None;
        }
        match Batch::parse(&self.buf) {
            Some(b) => Some(b),
            None => {
                self.failed = true;
                None
            }
        }
    }

    /// Whether the input ended early or a batch was malformed.
    pub fn failed(&self) -> bool {
        self.failed
    }
}

impl Default for Input {
    fn default() -> Self {
        Input::new()
    }
}

// ---- partials (docs/guest-abi.md section 5) ----------------------------------------------------------

/// The merged partials `reduce` reads, in the order the coordinator passes them.
pub struct Partials {
    buf: Vec<u8>,
    at: usize,
    left: u32,
}

/// Reads the partials of `reduce(partials_len, ...)`.
pub fn read_partials(partials_len: u32) -> Result<Partials, String> {
    let mut buf = vec![0u8; partials_len as usize];
    if !read_exact(&mut buf) || buf.len() < 8 || &buf[0..4] != b"TPL1" {
        return Err("partials are not TPL1 or are truncated".to_string());
    }
    let count = u32_at(&buf, 4);
    if count as usize > (buf.len() - 8) / 12 {
        return Err("partials are not TPL1 or are truncated".to_string());
    }
    Ok(Partials { buf, at: 8, left: count })
}

impl Partials {
    /// The next partial's key and value, or `None` when there are no more.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<(&str, f64)> {
        if self.left == 0 || self.at + 4 > self.buf.len() {
            return None;
        }
        let k = u32_at(&self.buf, self.at) as usize;
        let key_at = self.at + 4;
        if key_at + k + 8 > self.buf.len() {
            return None;
        }
        let mut v = [0u8; 8];
        v.copy_from_slice(&self.buf[key_at + k..key_at + k + 8]);
        self.at = key_at + k + 8;
        self.left -= 1;
        Some((str::from_utf8(&self.buf[key_at..key_at + k]).unwrap_or(""), f64::from_le_bytes(v)))
    }

    /// How many partials there are in all.
    pub fn len(&self) -> u32 {
        u32_at(&self.buf, 4)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// ---- HTTP handlers (docs/guest-abi.md section 8) -------------------------------------------------------

/// An HTTP handler's request, its response, and its one nested distributed call.
pub mod http {
    use std::str;

    /// A byte range of the request buffer.
    type Range = (usize, usize);

    /// The request `handle(req_len)` reads (HTTP request v1).
    pub struct Request {
        buf: Vec<u8>,
        route: u32,
        method: Range,
        path: Range,
        pattern: Range,
        params: Vec<(Range, Range)>,
        query: Vec<(Range, Range)>,
        headers: Vec<(Range, Range)>,
        body: Range,
    }

    fn str_at(b: &[u8], at: &mut usize) -> Option<Range> {
        if b.len() < *at + 4 {
            return None;
        }
        let n = super::u32_at(b, *at) as usize;
        if b.len() - *at - 4 < n {
            return None;
        }
        let r = (*at + 4, n);
        *at += 4 + n;
        Some(r)
    }

    fn pairs_at(b: &[u8], at: &mut usize) -> Option<Vec<(Range, Range)>> {
        if b.len() < *at + 4 {
            return None;
        }
        let n = super::u32_at(b, *at) as usize;
        *at += 4;
        let mut out = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let k = str_at(b, at)?;
            let v = str_at(b, at)?;
            out.push((k, v));
        }
        Some(out)
    }

    impl Request {
        /// Reads the request from fd 0.
        pub fn read(req_len: u32) -> Result<Request, String> {
            let mut buf = vec![0u8; req_len as usize];
            if !super::read_exact(&mut buf) || buf.len() < 8 || &buf[0..4] != b"THQ1" {
                return Err("the request is not THQ1 or is truncated".to_string());
            }
            let route = super::u32_at(&buf, 4);
            let mut at = 8usize;
            let parsed = (|| {
                let method = str_at(&buf, &mut at)?;
                let path = str_at(&buf, &mut at)?;
                let pattern = str_at(&buf, &mut at)?;
                let params = pairs_at(&buf, &mut at)?;
                let query = pairs_at(&buf, &mut at)?;
                let headers = pairs_at(&buf, &mut at)?;
                let body = str_at(&buf, &mut at)?;
                Some((method, path, pattern, params, query, headers, body))
            })();
            match parsed {
                Some((method, path, pattern, params, query, headers, body)) if at == buf.len() => {
                    Ok(Request { buf, route, method, path, pattern, params, query, headers, body })
                }
                _ => Err("the request is not THQ1 or is truncated".to_string()),
            }
        }

        fn text(&self, r: Range) -> &str {
            str::from_utf8(&self.buf[r.0..r.0 + r.1]).unwrap_or("")
        }

        fn bytes(&self, r: Range) -> &[u8] {
            &self.buf[r.0..r.0 + r.1]
        }

        /// The matched route's place in the manifest's `http.routes`, from 0.
        pub fn route(&self) -> u32 {
            self.route
        }
        pub fn method(&self) -> &str {
            self.text(self.method)
        }
        /// The path below `/v1/http/<binding>`, as received (percent-encoded).
        pub fn path(&self) -> &str {
            self.text(self.path)
        }
        /// The matched route's path pattern, as declared.
        pub fn pattern(&self) -> &str {
            self.text(self.pattern)
        }
        /// A path parameter, decoded.
        pub fn param(&self, name: &str) -> Option<&str> {
            self.params.iter().find(|(k, _)| self.text(*k) == name).map(|(_, v)| self.text(*v))
        }
        /// Every path parameter, in pattern order.
        pub fn params(&self) -> Vec<(&str, &str)> {
            self.params.iter().map(|(k, v)| (self.text(*k), self.text(*v))).collect()
        }
        /// The first query parameter of that name, decoded.
        pub fn query(&self, name: &str) -> Option<&str> {
            self.query.iter().find(|(k, _)| self.text(*k) == name).map(|(_, v)| self.text(*v))
        }
        /// Every query parameter, in request order.
        pub fn query_pairs(&self) -> Vec<(&str, &str)> {
            self.query.iter().map(|(k, v)| (self.text(*k), self.text(*v))).collect()
        }
        /// The first header of that (lower-case) name, as the bytes the request carried.
        pub fn header(&self, name: &str) -> Option<&[u8]> {
            self.headers.iter().find(|(k, _)| self.text(*k) == name).map(|(_, v)| self.bytes(*v))
        }
        /// Every header given, in request order: its lower-case name and the bytes the request carried.
        pub fn headers(&self) -> Vec<(&str, &[u8])> {
            self.headers.iter().map(|(k, v)| (self.text(*k), self.bytes(*v))).collect()
        }
        pub fn body(&self) -> &[u8] {
            self.bytes(self.body)
        }
    }

    /// The response's status (200 unless set; the last call wins).
    pub fn status(status: u16) {
        unsafe { super::host_http_status(status as i32) }
    }

    /// Adds a response header.
    pub fn header(name: &str, value: &str) {
        unsafe { super::host_http_header(name.as_ptr(), name.len() as i32, value.as_ptr(), value.len() as i32) }
    }

    /// Appends to the response body.
    pub fn body(bytes: &[u8]) {
        unsafe { super::host_http_body(bytes.as_ptr(), bytes.len() as i32) }
    }

    /// Appends `s` to the body as a JSON string.
    pub fn body_json_string(s: &str) {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        body(out.as_bytes());
    }

    /// A failed nested call: its error code (docs/contract.md) and its error object as JSON text.
    #[derive(Debug, Clone)]
    pub struct CallError {
        pub code: i32,
        pub json: String,
    }

    /// Runs one distributed call of a binding (`"name"`, or `"name@version"` to require that version) and waits for
    /// it, within the request's deadline: the result JSON, or the failure. A request makes one call
    /// (`limits.nestedCallsPerRequest`); the next fails 3012 (`NESTED_CALL_LIMIT_EXCEEDED`). Returning the failure's
    /// code from `handle` fails the request as the call failed.
    pub fn call(descriptor: &str, args: &str) -> Result<String, CallError> {
        let code = unsafe { super::host_call(descriptor.as_ptr(), descriptor.len() as i32, args.as_ptr(), args.len() as i32) };
        let n = unsafe { super::host_call_result_len() } as usize;
        let mut buf = vec![0u8; n];
        let read = super::read_exact(&mut buf);
        let text = if read { String::from_utf8(buf).unwrap_or_default() } else { String::new() };
        if code == 0 {
            Ok(text)
        } else {
            Err(CallError { code, json: text })
        }
    }
}
