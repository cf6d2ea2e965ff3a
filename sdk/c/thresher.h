/*
 * thresher.h — the Thresher guest SDK for C: one header, no libc.
 *
 * Build a component with Debian's clang and lld (docs/components.md, "Writing a component in C"):
 *
 *   clang --target=wasm32 -O2 -nostdlib -fno-builtin -Wl,--no-entry -Wl,--export=run -Wl,--export=reduce \
 *         -Wl,--export=thresher_abi_version -Wl,--max-memory=16777216 -Wl,--strip-all -o component.wasm component.c
 *
 * Speaks guest ABI 2 (docs/guest-abi.md): run(args_len) reads the call's arguments, then the partition as a
 * stream of row batches; reduce(partials_len, args_len) reads the merged partials, then the arguments, and
 * writes one JSON value. The names match the Rust crate and the AssemblyScript library:
 *
 *   run:    thr_read_args, thr_next_batch, thr_batch_* accessors, thr_emit, thr_fail
 *   reduce: thr_read_partials, thr_next_partial, thr_read_args, thr_json_*, thr_fail
 *
 * An HTTP handler (docs/guest-abi.md section 8) defines THR_HANDLER before including this header and exports
 * handle(req_len) itself; the header then exports thresher_handler_abi_version instead of thresher_abi_version:
 *
 *   handle: thr_read_request, thr_param, thr_query, thr_header, thr_call, thr_http_status, thr_http_header,
 *           thr_http_body, thr_http_body_str, thr_http_body_json_string, thr_fail
 *
 * Memory: input goes to buffers this header grows on its own (thr_alloc, a bump allocator over
 * memory.grow); a batch is read over the previous one, so keep what you need past a batch in memory of
 * your own (thr_alloc). Nothing is freed: an instance serves one invocation at a time, and thr_reset()
 * at the start of each export returns its memory.
 */
#ifndef THRESHER_H
#define THRESHER_H

#include <stdint.h>
#include <stddef.h>

#define THR_ABI_VERSION 2
#define THR_HANDLER_ABI_VERSION 1
#define THR_MAX_COLUMNS 64

/* ---- the host's imports (docs/guest-abi.md section 1) ------------------------------------------- */

#define THR_IMPORT(module, name) __attribute__((import_module(module), import_name(name)))

THR_IMPORT("thresher", "emit") int32_t thr__emit(const void *key, int32_t key_len, double value);
THR_IMPORT("thresher", "fail") void thr__fail(const void *msg, int32_t msg_len);
THR_IMPORT("thresher", "json_begin_object") void thr_json_begin_object(void);
THR_IMPORT("thresher", "json_end_object") void thr_json_end_object(void);
THR_IMPORT("thresher", "json_begin_array") void thr_json_begin_array(void);
THR_IMPORT("thresher", "json_end_array") void thr_json_end_array(void);
THR_IMPORT("thresher", "json_key") void thr__json_key(const void *ptr, int32_t len);
THR_IMPORT("thresher", "json_string") void thr__json_string(const void *ptr, int32_t len);
THR_IMPORT("thresher", "json_number") void thr_json_number(double value);
THR_IMPORT("thresher", "json_integer") void thr_json_integer(int64_t value);
THR_IMPORT("thresher", "json_bool") void thr__json_bool(int32_t value);
THR_IMPORT("thresher", "json_null") void thr_json_null(void);

/* HTTP handlers only (docs/guest-abi.md section 8); a function not called is not imported. */
THR_IMPORT("thresher", "http_status") void thr_http_status(int32_t status);
THR_IMPORT("thresher", "http_header") void thr__http_header(const void *name, int32_t name_len, const void *value, int32_t value_len);
THR_IMPORT("thresher", "http_body") void thr__http_body(const void *ptr, int32_t len);
THR_IMPORT("thresher", "call") int32_t thr__call(const void *descriptor, int32_t descriptor_len, const void *args, int32_t args_len);
THR_IMPORT("thresher", "call_result_len") int32_t thr__call_result_len(void);

typedef struct { uint8_t *buf; uint32_t len; } thr__iovec;
THR_IMPORT("wasi_snapshot_preview1", "fd_read") int32_t thr__fd_read(int32_t fd, thr__iovec *iovs, int32_t n, uint32_t *nread);
THR_IMPORT("wasi_snapshot_preview1", "fd_write") int32_t thr__fd_write(int32_t fd, const thr__iovec *iovs, int32_t n, uint32_t *nwritten);

/* ---- freestanding helpers ---------------------------------------------------------------------- */

__attribute__((weak)) void *memcpy(void *dst, const void *src, size_t n) {
    uint8_t *d = (uint8_t *) dst;
    const uint8_t *s = (const uint8_t *) src;
    while (n--) *d++ = *s++;
    return dst;
}

__attribute__((weak)) void *memset(void *dst, int c, size_t n) {
    uint8_t *d = (uint8_t *) dst;
    while (n--) *d++ = (uint8_t) c;
    return dst;
}

__attribute__((weak)) int memcmp(const void *a, const void *b, size_t n) {
    const uint8_t *x = (const uint8_t *) a, *y = (const uint8_t *) b;
    for (; n; n--, x++, y++) if (*x != *y) return *x < *y ? -1 : 1;
    return 0;
}

static inline size_t thr_strlen(const char *s) { size_t n = 0; while (s[n]) n++; return n; }

/* ---- memory: a bump allocator over memory.grow -------------------------------------------------- */

extern unsigned char __heap_base;
static uintptr_t thr__top;
static uint8_t *thr__batch_buf;
static uint32_t thr__batch_cap;
static int thr__input_error;

/* Forgets every allocation and the input's state: call it first in each export. */
static inline void thr_reset(void) {
    thr__top = 0;
    thr__batch_buf = 0;
    thr__batch_cap = 0;
    thr__input_error = 0;
}

/* n bytes, 8-aligned, or NULL when memory cannot grow (the module's maximum, or the host's). */
static inline void *thr_alloc(uint32_t n) {
    if (thr__top == 0) thr__top = ((uintptr_t) &__heap_base + 7) & ~(uintptr_t) 7;
    uintptr_t at = thr__top, end = at + (((uintptr_t) n + 7) & ~(uintptr_t) 7);
    uintptr_t have = __builtin_wasm_memory_size(0) * 65536u;
    if (end > have && __builtin_wasm_memory_grow(0, (end - have + 65535) / 65536) == (size_t) -1) return 0;
    thr__top = end;
    return (void *) at;
}

/* ---- output ------------------------------------------------------------------------------------ */

/* Adds the partial (key, value); 0 accepted, 1 refused (the emit limit: the run has failed, return). */
static inline int32_t thr_emit(const char *key, uint32_t key_len, double value) {
    return thr__emit(key, (int32_t) key_len, value);
}

/* Records why the invocation fails; return non-zero after it. Returns 1, so `return thr_fail("...");`. */
static inline int32_t thr_fail(const char *message) {
    thr__fail(message, (int32_t) thr_strlen(message));
    return 1;
}

/* Writes to stderr: shown with the failure when the invocation fails, dropped otherwise. */
static inline void thr_log(const char *message) {
    thr__iovec v = {(uint8_t *) message, (uint32_t) thr_strlen(message)};
    uint32_t n;
    thr__fd_write(2, &v, 1, &n);
}

static inline void thr_json_key(const char *key, uint32_t len) { thr__json_key(key, (int32_t) len); }
static inline void thr_json_string(const char *s, uint32_t len) { thr__json_string(s, (int32_t) len); }
static inline void thr_json_bool(int value) { thr__json_bool(value ? 1 : 0); }

/* ---- input: fd 0 ------------------------------------------------------------------------------- */

/* Reads exactly n bytes of fd 0 to dst; 0 on success, 1 when the input ended first. */
static inline int thr_read_exact(void *dst, uint32_t n) {
    uint32_t got = 0;
    while (got < n) {
        thr__iovec v = {(uint8_t *) dst + got, n - got};
        uint32_t r = 0;
        if (thr__fd_read(0, &v, 1, &r) != 0 || r == 0) return 1;
        got += r;
    }
    return 0;
}

/* The call's arguments: UTF-8 JSON text, as the caller sent it. */
typedef struct { const char *json; uint32_t len; } thr_args;

/* Reads the arguments (run: first; reduce: after the partials); 0 ok, 1 input ended or no memory. */
static inline int thr_read_args(uint32_t args_len, thr_args *out) {
    char *p = (char *) thr_alloc(args_len + 1);
    if (!p || thr_read_exact(p, args_len)) return 1;
    p[args_len] = 0;
    out->json = p;
    out->len = args_len;
    return 0;
}

/* ---- row batches (docs/guest-abi.md section 4) -------------------------------------------------- */

typedef enum { THR_INT64 = 1, THR_FLOAT64 = 2, THR_TEXT = 3, THR_BOOL = 4, THR_BYTES = 5 } thr_type;

typedef struct {
    thr_type type;
    int nullable;
    const char *name;       /* not NUL-terminated */
    uint32_t name_len;
    const uint8_t *nulls;   /* the null bitmap, or NULL when not nullable */
    const uint8_t *data;    /* fixed-width values, or the offset table of text and bytes */
    const uint8_t *payload; /* text and bytes: the payload */
} thr_column;

typedef struct {
    uint32_t partition;
    uint32_t rows;
    uint32_t columns;
    thr_column column[THR_MAX_COLUMNS];
} thr_batch;

static inline uint32_t thr__u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint32_t thr__pad8(uint32_t n) { return (n + 7) & ~7u; }

/* Decodes the batch of len bytes at bytes into b (no copy: b points into bytes); 0 ok, 1 malformed. */
static inline int thr_batch_parse(const uint8_t *bytes, uint32_t len, thr_batch *b) {
    if (len < 16 || memcmp(bytes, "TRB1", 4) != 0) return 1;
    b->partition = thr__u32(bytes + 4);
    b->rows = thr__u32(bytes + 8);
    b->columns = thr__u32(bytes + 12);
    if (b->columns > THR_MAX_COLUMNS) return 1;
    uint32_t at = 16;
    for (uint32_t c = 0; c < b->columns; c++) {
        if (at + 4 > len) return 1;
        thr_column *col = &b->column[c];
        col->type = (thr_type) bytes[at];
        col->nullable = bytes[at + 1] & 1;
        col->name_len = (uint32_t) bytes[at + 2] | (uint32_t) bytes[at + 3] << 8;
        col->name = (const char *) bytes + at + 4;
        at += 4 + col->name_len;
    }
    at = thr__pad8(at);
    uint32_t r = b->rows;
    for (uint32_t c = 0; c < b->columns; c++) {
        thr_column *col = &b->column[c];
        col->nulls = 0;
        col->payload = 0;
        if (col->nullable) {
            col->nulls = bytes + at;
            at += thr__pad8((r + 7) / 8);
        }
        col->data = bytes + at;
        switch (col->type) {
            case THR_INT64: case THR_FLOAT64: at += 8 * r; break;
            case THR_BOOL: at += thr__pad8(r); break;
            case THR_TEXT: case THR_BYTES: {
                uint32_t table = at;
                at += thr__pad8(4 * (r + 1));
                if (at > len) return 1;
                col->payload = bytes + at;
                at += thr__pad8(thr__u32(bytes + table + 4 * r));
                break;
            }
            default: return 1;
        }
        if (at > len) return 1;
    }
    return at == len ? 0 : 1;
}

/* The index of the column named name, or -1. */
static inline int thr_batch_column(const thr_batch *b, const char *name) {
    uint32_t n = (uint32_t) thr_strlen(name);
    for (uint32_t c = 0; c < b->columns; c++)
        if (b->column[c].name_len == n && memcmp(b->column[c].name, name, n) == 0) return (int) c;
    return -1;
}

/* Whether the column has the type and nullability given: check the layout your selector fixes. */
static inline int thr_batch_is(const thr_batch *b, uint32_t c, const char *name, thr_type type, int nullable) {
    return c < b->columns && b->column[c].type == type && b->column[c].nullable == nullable
        && thr_batch_column(b, name) == (int) c;
}

static inline int thr_is_null(const thr_batch *b, uint32_t c, uint32_t row) {
    const uint8_t *n = b->column[c].nulls;
    return n && (n[row >> 3] >> (row & 7)) & 1;
}

static inline int64_t thr_int64(const thr_batch *b, uint32_t c, uint32_t row) {
    int64_t v; memcpy(&v, b->column[c].data + 8 * row, 8); return v;
}

static inline double thr_float64(const thr_batch *b, uint32_t c, uint32_t row) {
    double v; memcpy(&v, b->column[c].data + 8 * row, 8); return v;
}

static inline int thr_bool(const thr_batch *b, uint32_t c, uint32_t row) { return b->column[c].data[row] != 0; }

/* Text (UTF-8, not NUL-terminated) or bytes of a row: *len gets its length. */
static inline const char *thr_text(const thr_batch *b, uint32_t c, uint32_t row, uint32_t *len) {
    uint32_t from = thr__u32(b->column[c].data + 4 * row), to = thr__u32(b->column[c].data + 4 * (row + 1));
    *len = to - from;
    return (const char *) b->column[c].payload + from;
}

static inline const uint8_t *thr_bytes(const thr_batch *b, uint32_t c, uint32_t row, uint32_t *len) {
    return (const uint8_t *) thr_text(b, c, row, len);
}

/* ---- paged input (docs/guest-abi.md section 4a) ------------------------------------------------- */

/*
 * The next batch of the partition into b: 1 when there is one, 0 at the end of the partition or when the
 * input could not be read (thr_input_failed() tells which). The batch is read over the previous one.
 */
static inline int thr_next_batch(thr_batch *b) {
    uint32_t len;
    if (thr_read_exact(&len, 4)) { thr__input_error = 1; return 0; }
    if (len == 0) return 0;
    if (len > thr__batch_cap) {
        thr__batch_buf = (uint8_t *) thr_alloc(len);
        if (!thr__batch_buf) { thr__batch_cap = 0; thr__input_error = 1; return 0; }
        thr__batch_cap = len;
    }
    if (thr_read_exact(thr__batch_buf, len) || thr_batch_parse(thr__batch_buf, len, b)) {
        thr__input_error = 1;
        return 0;
    }
    return 1;
}

/* Whether the input ended early, a batch was malformed, or memory ran out. */
static inline int thr_input_failed(void) { return thr__input_error; }

/* ---- partials (docs/guest-abi.md section 5) ---------------------------------------------------- */

typedef struct { const uint8_t *at; const uint8_t *end; uint32_t count; uint32_t left; } thr_partials;

/* Reads the partials of reduce(partials_len, ...); 0 ok, 1 input ended, malformed or no memory. */
static inline int thr_read_partials(uint32_t partials_len, thr_partials *p) {
    uint8_t *buf = (uint8_t *) thr_alloc(partials_len);
    if (!buf || thr_read_exact(buf, partials_len) || partials_len < 8 || memcmp(buf, "TPL1", 4) != 0) return 1;
    p->count = p->left = thr__u32(buf + 4);
    p->at = buf + 8;
    p->end = buf + partials_len;
    return p->count > (partials_len - 8) / 12;
}

/* The next partial: 1 with its key (not NUL-terminated), key length and value; 0 when there are no more. */
static inline int thr_next_partial(thr_partials *p, const char **key, uint32_t *key_len, double *value) {
    if (p->left == 0 || p->at + 4 > p->end) return 0;
    uint32_t k = thr__u32(p->at);
    if (p->at + 4 + k + 8 > p->end) return 0;
    *key = (const char *) p->at + 4;
    *key_len = k;
    memcpy(value, p->at + 4 + k, 8);
    p->at += 4 + k + 8;
    p->left--;
    return 1;
}

/* ---- HTTP handlers (docs/guest-abi.md section 8) ------------------------------------------------ */

/* Text in the request or a call's outcome: not NUL-terminated. */
typedef struct { const char *ptr; uint32_t len; } thr_str;

/* A list of (name, value) pairs of the request, walked with thr_next_pair. */
typedef struct { const uint8_t *at; uint32_t left; } thr_pairs;

/* An HTTP request as the handler reads it (HTTP request v1); it points into a buffer of thr_alloc. */
typedef struct {
    uint32_t route;          /* the matched route's place in the manifest's http.routes, from 0 */
    thr_str method;          /* "GET", ... */
    thr_str path;            /* below /v1/http/<binding>, as received (percent-encoded) */
    thr_str pattern;         /* the matched route's path pattern, as declared */
    thr_pairs params;        /* path parameters, decoded, in pattern order */
    thr_pairs query;         /* query parameters, decoded, in request order */
    thr_pairs headers;       /* the headers given (content-type, accept, the route's own), names lower-case */
    const uint8_t *body;
    uint32_t body_len;
} thr_request;

static inline int thr__str(const uint8_t **at, const uint8_t *end, thr_str *s) {
    if (end - *at < 4) return 1;
    uint32_t n = thr__u32(*at);
    if ((uint32_t) (end - *at - 4) < n) return 1;
    s->ptr = (const char *) *at + 4;
    s->len = n;
    *at += 4 + n;
    return 0;
}

static inline int thr__pairs(const uint8_t **at, const uint8_t *end, thr_pairs *p) {
    if (end - *at < 4) return 1;
    p->left = thr__u32(*at);
    *at += 4;
    p->at = *at;
    for (uint32_t i = 0; i < p->left; i++) {
        thr_str x;
        if (thr__str(at, end, &x) || thr__str(at, end, &x)) return 1;
    }
    return 0;
}

/* Reads the request of handle(req_len) from fd 0; 0 ok, 1 input ended, malformed or no memory. */
static inline int thr_read_request(uint32_t req_len, thr_request *r) {
    uint8_t *buf = (uint8_t *) thr_alloc(req_len);
    if (!buf || thr_read_exact(buf, req_len) || req_len < 8 || memcmp(buf, "THQ1", 4) != 0) return 1;
    const uint8_t *at = buf + 8, *end = buf + req_len;
    thr_str body;
    r->route = thr__u32(buf + 4);
    if (thr__str(&at, end, &r->method) || thr__str(&at, end, &r->path) || thr__str(&at, end, &r->pattern)
        || thr__pairs(&at, end, &r->params) || thr__pairs(&at, end, &r->query) || thr__pairs(&at, end, &r->headers)
        || thr__str(&at, end, &body) || at != end) return 1;
    r->body = (const uint8_t *) body.ptr;
    r->body_len = body.len;
    return 0;
}

/* The next pair of a list: 1 with its name and value, 0 when there are no more. */
static inline int thr_next_pair(thr_pairs *p, thr_str *name, thr_str *value) {
    if (p->left == 0) return 0;
    name->len = thr__u32(p->at);
    name->ptr = (const char *) p->at + 4;
    p->at += 4 + name->len;
    value->len = thr__u32(p->at);
    value->ptr = (const char *) p->at + 4;
    p->at += 4 + value->len;
    p->left--;
    return 1;
}

/* Whether s holds exactly the NUL-terminated text c. */
static inline int thr_str_is(thr_str s, const char *c) {
    uint32_t n = (uint32_t) thr_strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

/* The first value named name in a list: 1 found (its value in *value), 0 not. */
static inline int thr_find(thr_pairs list, const char *name, thr_str *value) {
    thr_str n;
    while (thr_next_pair(&list, &n, value))
        if (thr_str_is(n, name)) return 1;
    return 0;
}

static inline int thr_param(const thr_request *r, const char *name, thr_str *value) { return thr_find(r->params, name, value); }
static inline int thr_query(const thr_request *r, const char *name, thr_str *value) { return thr_find(r->query, name, value); }
static inline int thr_header(const thr_request *r, const char *name, thr_str *value) { return thr_find(r->headers, name, value); }

/* The response: status (200 unless set; the last call wins), headers in order, the body appended piece by piece. */
static inline void thr_http_header(const char *name, const char *value) {
    thr__http_header(name, (int32_t) thr_strlen(name), value, (int32_t) thr_strlen(value));
}
static inline void thr_http_body(const void *ptr, uint32_t len) { thr__http_body(ptr, (int32_t) len); }
static inline void thr_http_body_str(const char *s) { thr__http_body(s, (int32_t) thr_strlen(s)); }

/* Appends s (UTF-8, len bytes) to the body as a JSON string: quoted, with " \ and control characters escaped. */
static inline void thr_http_body_json_string(const char *s, uint32_t len) {
    static const char hex[] = "0123456789abcdef";
    char chunk[256];
    uint32_t n = 0;
    chunk[n++] = '"';
    for (uint32_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) s[i];
        if (n > sizeof chunk - 8) { thr__http_body(chunk, (int32_t) n); n = 0; }
        if (c == '"' || c == '\\') { chunk[n++] = '\\'; chunk[n++] = (char) c; }
        else if (c < 0x20) {
            chunk[n++] = '\\'; chunk[n++] = 'u'; chunk[n++] = '0'; chunk[n++] = '0';
            chunk[n++] = hex[c >> 4]; chunk[n++] = hex[c & 15];
        } else chunk[n++] = (char) c;
    }
    chunk[n++] = '"';
    thr__http_body(chunk, (int32_t) n);
}

/*
 * Runs one distributed call of a binding ("name", or "name@version" to require that version) with JSON arguments,
 * and waits for it, within the request's deadline. Returns 0 with the result JSON in *out, or the failure's error
 * code (docs/contract.md) with its error object, {"error": {"code": ..., "message": ...}}, in *out; out->ptr is NULL
 * when memory ran out. A request makes one call (limits.nestedCallsPerRequest): the next returns 3012
 * (NESTED_CALL_LIMIT_EXCEEDED). Returning the code from handle fails the request as the call failed.
 */
static inline int32_t thr_call(const char *descriptor, const char *args, uint32_t args_len, thr_str *out) {
    int32_t code = thr__call(descriptor, (int32_t) thr_strlen(descriptor), args, (int32_t) args_len);
    uint32_t n = (uint32_t) thr__call_result_len();
    char *buf = (char *) thr_alloc(n + 1);
    out->ptr = 0;
    out->len = 0;
    if (buf && !thr_read_exact(buf, n)) {
        buf[n] = 0;
        out->ptr = buf;
        out->len = n;
    }
    return code;
}

/* ---- the ABI version export -------------------------------------------------------------------- */

#ifdef THR_HANDLER
__attribute__((export_name("thresher_handler_abi_version"))) int32_t thresher_handler_abi_version(void) {
    return THR_HANDLER_ABI_VERSION;
}
#else
__attribute__((export_name("thresher_abi_version"))) int32_t thresher_abi_version(void) { return THR_ABI_VERSION; }
#endif

#endif /* THRESHER_H */
