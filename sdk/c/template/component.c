/*
 * A Thresher component in C: copy this directory, rename the binding in thresher.json, write run and reduce.
 *
 * This one counts rows: run emits p<partition>/rows = the partition's row count; reduce writes {"rows": <total>}.
 * Build:  make          Try it:  ./thresher component test . --csv rows.csv --partitions 4
 */
#include "thresher.h"

__attribute__((export_name("run"))) int32_t run(int32_t args_len) {
    thr_reset();
    thr_args args;
    if (thr_read_args((uint32_t) args_len, &args)) return thr_fail("input ended before the arguments");
    thr_batch batch;
    uint32_t partition = 0;
    double rows = 0;
    while (thr_next_batch(&batch)) {   /* a partition of any size comes as one batch after another */
        partition = batch.partition;
        rows += batch.rows;
    }
    if (thr_input_failed()) return thr_fail("a batch could not be read");
    char key[24];
    uint32_t at = 0, n = 0;
    char digits[10];
    do { digits[n++] = (char) ('0' + partition % 10); partition /= 10; } while (partition);
    key[at++] = 'p';
    while (n) key[at++] = digits[--n];
    memcpy(key + at, "/rows", 5);
    at += 5;
    if (thr_emit(key, at, rows)) return thr_fail("emit refused");   /* keys are unique across partitions */
    return 0;
}

__attribute__((export_name("reduce"))) int32_t reduce(int32_t partials_len, int32_t args_len) {
    thr_reset();
    thr_partials partials;
    if (thr_read_partials((uint32_t) partials_len, &partials)) return thr_fail("partials are malformed");
    thr_args args;
    if (thr_read_args((uint32_t) args_len, &args)) return thr_fail("input ended before the arguments");
    const char *key;
    uint32_t key_len;
    double value, total = 0;
    while (thr_next_partial(&partials, &key, &key_len, &value)) total += value;
    thr_json_begin_object();
    thr_json_key("rows", 4);
    thr_json_integer((int64_t) total);
    thr_json_end_object();
    return 0;
}
