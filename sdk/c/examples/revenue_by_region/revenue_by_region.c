/*
 * revenue_by_region in C: revenue sum and order count per region, as examples/revenue_by_region does in
 * WebAssembly text, with the same partials and the same result.
 *
 * Bound with the selector   SELECT region, amount FROM orders   (region text not null, amount float8 not null).
 *   run     per region of the partition, emits   p<partition>/<region>/sum   = sum of amount
 *                                                p<partition>/<region>/count = number of rows
 *   reduce  adds the partials up per region:   {"<region>": {"sum": <number>, "count": <integer>}, ...}
 *           regions in ascending byte order
 */
#include "thresher.h"

typedef struct {
    const char *name;
    uint32_t len;
    double sum;
    double count;
} region;

static region *regions;
static uint32_t region_count, region_cap;

/* The region named name (its bytes are copied the first time it is seen), or NULL when memory ran out. */
static region *find(const char *name, uint32_t len) {
    for (uint32_t i = 0; i < region_count; i++)
        if (regions[i].len == len && memcmp(regions[i].name, name, len) == 0) return &regions[i];
    if (region_count == region_cap) {
        uint32_t cap = region_cap ? 2 * region_cap : 64;
        region *grown = (region *) thr_alloc(cap * sizeof(region));
        if (!grown) return 0;
        if (region_count) memcpy(grown, regions, region_count * sizeof(region));
        regions = grown;
        region_cap = cap;
    }
    char *copy = (char *) thr_alloc(len);
    if (!copy) return 0;
    memcpy(copy, name, len);
    region *r = &regions[region_count++];
    r->name = copy;
    r->len = len;
    r->sum = 0;
    r->count = 0;
    return r;
}

static void start(void) {
    thr_reset();
    regions = 0;
    region_count = region_cap = 0;
}

/* Writes "p<partition>/<region>/<suffix>" at out; returns its length. */
static uint32_t key(char *out, uint32_t partition, const region *r, const char *suffix) {
    char digits[10];
    uint32_t n = 0, at = 0;
    do { digits[n++] = (char) ('0' + partition % 10); partition /= 10; } while (partition);
    out[at++] = 'p';
    while (n) out[at++] = digits[--n];
    out[at++] = '/';
    memcpy(out + at, r->name, r->len);
    at += r->len;
    out[at++] = '/';
    for (const char *s = suffix; *s; s++) out[at++] = *s;
    return at;
}

__attribute__((export_name("run"))) int32_t run(int32_t args_len) {
    start();
    thr_args args;
    if (thr_read_args((uint32_t) args_len, &args)) return thr_fail("input ended before the announced length");
    thr_batch b;
    uint32_t partition = 0;
    while (thr_next_batch(&b)) {
        if (b.columns != 2 || !thr_batch_is(&b, 0, "region", THR_TEXT, 0) || !thr_batch_is(&b, 1, "amount", THR_FLOAT64, 0))
            return thr_fail("batch is not TRB1 with columns region TEXT NOT NULL, amount FLOAT64 NOT NULL");
        partition = b.partition;
        for (uint32_t row = 0; row < b.rows; row++) {
            uint32_t len;
            const char *name = thr_text(&b, 0, row, &len);
            region *r = find(name, len);
            if (!r) return thr_fail("out of memory");
            r->sum += thr_float64(&b, 1, row);
            r->count += 1;
        }
    }
    if (thr_input_failed()) return thr_fail("input ended before the announced length");
    for (uint32_t i = 0; i < region_count; i++) {
        char *k = (char *) thr_alloc(regions[i].len + 24);
        if (!k) return thr_fail("out of memory");
        if (thr_emit(k, key(k, partition, &regions[i], "sum"), regions[i].sum)) return thr_fail("emit refused");
        if (thr_emit(k, key(k, partition, &regions[i], "count"), regions[i].count)) return thr_fail("emit refused");
    }
    return 0;
}

static int before(const region *a, const region *b) {
    uint32_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->name, b->name, n);
    return c < 0 || (c == 0 && a->len < b->len);
}

__attribute__((export_name("reduce"))) int32_t reduce(int32_t partials_len, int32_t args_len) {
    start();
    thr_partials p;
    if (thr_read_partials((uint32_t) partials_len, &p)) return thr_fail("partials are not TPL1 or are truncated");
    thr_args args;
    if (thr_read_args((uint32_t) args_len, &args)) return thr_fail("input ended before the announced length");
    const char *k;
    uint32_t klen;
    double value;
    while (thr_next_partial(&p, &k, &klen, &value)) {
        uint32_t first = 0, last = klen;
        while (first < klen && k[first] != '/') first++;
        while (last > first + 1 && k[last - 1] != '/') last--;
        if (first >= klen || last <= first + 1) return thr_fail("a partial key is not p<partition>/<region>/<sum|count>");
        region *r = find(k + first + 1, last - first - 2);
        if (!r) return thr_fail("out of memory");
        uint32_t suffix = klen - last;
        if (suffix == 3 && memcmp(k + last, "sum", 3) == 0) r->sum += value;
        else if (suffix == 5 && memcmp(k + last, "count", 5) == 0) r->count += value;
        else return thr_fail("a partial key is not p<partition>/<region>/<sum|count>");
    }
    for (uint32_t i = 1; i < region_count; i++) {   /* insertion sort: a handful of regions */
        region r = regions[i];
        uint32_t j = i;
        while (j > 0 && before(&r, &regions[j - 1])) { regions[j] = regions[j - 1]; j--; }
        regions[j] = r;
    }
    thr_json_begin_object();
    for (uint32_t i = 0; i < region_count; i++) {
        thr_json_key(regions[i].name, regions[i].len);
        thr_json_begin_object();
        thr_json_key("sum", 3);
        thr_json_number(regions[i].sum);
        thr_json_key("count", 5);
        thr_json_integer((int64_t) regions[i].count);
        thr_json_end_object();
    }
    thr_json_end_object();
    return 0;
}
