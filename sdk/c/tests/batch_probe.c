/*
 * batch_probe: the C SDK's view of the row batches it is given, as partials, so a test can hold it against the
 * host's own decoding of the golden vectors (tests: GuestSdksIT). For the first batch:
 *   partition, rows, columns
 *   c<i>/type, c<i>/nullable, c<i>/name (FNV-1a 32 of the name's bytes), c<i>/nulls (NULL rows),
 *   c<i>/values: FNV-1a 32 over every row: 0xFF for NULL, else int64 and float64 as their 8 little-endian bytes
 *   (bit patterns exact), bool as 1 byte, text and bytes as a u32 little-endian length then the bytes
 * and batches = how many batches the partition came in.
 */
#include "thresher.h"

static uint32_t fnv(uint32_t h, const void *p, uint32_t n) {
    const uint8_t *b = (const uint8_t *) p;
    for (uint32_t i = 0; i < n; i++) { h ^= b[i]; h *= 16777619u; }
    return h;
}

static int emit_named(const char *prefix, uint32_t column, const char *what, double value) {
    char key[64];
    uint32_t at = 0;
    for (const char *s = prefix; *s; s++) key[at++] = *s;
    if (column != 0xFFFFFFFFu) {
        char d[10]; uint32_t n = 0;
        do { d[n++] = (char) ('0' + column % 10); column /= 10; } while (column);
        while (n) key[at++] = d[--n];
        key[at++] = '/';
    }
    for (const char *s = what; *s; s++) key[at++] = *s;
    return thr_emit(key, at, value);
}

__attribute__((export_name("run"))) int32_t run(int32_t args_len) {
    thr_reset();
    thr_args args;
    if (thr_read_args((uint32_t) args_len, &args)) return thr_fail("no arguments");
    thr_batch b;
    uint32_t batches = 0;
    while (thr_next_batch(&b)) {
        if (batches++ > 0) continue;
        emit_named("", 0xFFFFFFFFu, "partition", b.partition);
        emit_named("", 0xFFFFFFFFu, "rows", b.rows);
        emit_named("", 0xFFFFFFFFu, "columns", b.columns);
        for (uint32_t c = 0; c < b.columns; c++) {
            const thr_column *col = &b.column[c];
            uint32_t nulls = 0, h = 2166136261u;
            for (uint32_t r = 0; r < b.rows; r++) {
                if (thr_is_null(&b, c, r)) { nulls++; uint8_t ff = 0xFF; h = fnv(h, &ff, 1); continue; }
                switch (col->type) {
                    case THR_INT64: { int64_t v = thr_int64(&b, c, r); h = fnv(h, &v, 8); break; }
                    case THR_FLOAT64: { double v = thr_float64(&b, c, r); h = fnv(h, &v, 8); break; }
                    case THR_BOOL: { uint8_t v = (uint8_t) thr_bool(&b, c, r); h = fnv(h, &v, 1); break; }
                    case THR_TEXT: case THR_BYTES: {
                        uint32_t len;
                        const uint8_t *p = thr_bytes(&b, c, r, &len);
                        h = fnv(h, &len, 4);
                        h = fnv(h, p, len);
                        break;
                    }
                }
            }
            emit_named("c", c, "type", col->type);
            emit_named("c", c, "nullable", col->nullable);
            emit_named("c", c, "name", fnv(2166136261u, col->name, col->name_len));
            emit_named("c", c, "nulls", nulls);
            emit_named("c", c, "values", h);
        }
    }
    if (thr_input_failed()) return thr_fail("a batch could not be read");
    emit_named("", 0xFFFFFFFFu, "batches", batches);
    return 0;
}

__attribute__((export_name("reduce"))) int32_t reduce(int32_t partials_len, int32_t args_len) {
    (void) partials_len;
    (void) args_len;
    thr_json_begin_object();
    thr_json_end_object();
    return 0;
}
