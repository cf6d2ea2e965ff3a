/*
 * request_probe: the C SDK's view of the HTTP request it is given, as its response body, so a test can hold it against
 * the host's own decoding of the golden request vectors (tests: GuestSdksIT). One line per item, each ending in \n:
 *   route <index>, method <text>, path <text>, pattern <text>,
 *   param <name> <hex of the value's bytes>, query <name> <hex>, header <name> <hex> (each list in order),
 *   body <hex>
 */
#define THR_HANDLER
#include "thresher.h"

static void text(const char *s, uint32_t n) { thr_http_body(s, n); }

static void hex(const char *s, uint32_t n) {
    static const char digits[] = "0123456789abcdef";
    char two[2];
    for (uint32_t i = 0; i < n; i++) {
        two[0] = digits[(unsigned char) s[i] >> 4];
        two[1] = digits[(unsigned char) s[i] & 15];
        thr_http_body(two, 2);
    }
}

static void pairs(const char *what, thr_pairs list) {
    thr_str name, value;
    while (thr_next_pair(&list, &name, &value)) {
        thr_http_body_str(what);
        thr_http_body_str(" ");
        text(name.ptr, name.len);
        thr_http_body_str(" ");
        hex(value.ptr, value.len);
        thr_http_body_str("\n");
    }
}

__attribute__((export_name("handle"))) int32_t handle(int32_t req_len) {
    thr_reset();
    thr_request r;
    if (thr_read_request((uint32_t) req_len, &r)) return thr_fail("the request could not be read");
    char d[10];
    uint32_t n = 0, route = r.route;
    do { d[n++] = (char) ('0' + route % 10); route /= 10; } while (route);
    thr_http_body_str("route ");
    while (n) thr_http_body(&d[--n], 1);
    thr_http_body_str("\nmethod ");
    text(r.method.ptr, r.method.len);
    thr_http_body_str("\npath ");
    text(r.path.ptr, r.path.len);
    thr_http_body_str("\npattern ");
    text(r.pattern.ptr, r.pattern.len);
    thr_http_body_str("\n");
    pairs("param", r.params);
    pairs("query", r.query);
    pairs("header", r.headers);
    thr_http_body_str("body ");
    hex((const char *) r.body, r.body_len);
    thr_http_body_str("\n");
    return 0;
}
