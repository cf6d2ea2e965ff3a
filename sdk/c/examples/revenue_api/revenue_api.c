/*
 * revenue_api in C: an HTTP handler over the sample binding revenue_by_region (docs/components.md, "HTTP
 * handlers"). Each request makes one distributed call of revenue_by_region and answers from its result:
 *
 *   GET /v1/http/revenue_api_c/revenue                   the whole result, as the call answers it
 *   GET /v1/http/revenue_api_c/regions/{region}/revenue  that region's {"sum": ..., "count": ...}; 404 when absent
 *
 * A failed call fails the request with the call's own error (the handler returns its code).
 */
#define THR_HANDLER
#include "thresher.h"

/* In the JSON object json (the call's result), the value of the top-level key named key: 1 found, 0 not. */
static int member(thr_str json, thr_str key, thr_str *value) {
    const char *p = json.ptr, *end = json.ptr + json.len;
    int depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            const char *start = ++p;
            while (p < end && *p != '"') p += (*p == '\\') ? 2 : 1;
            if (p >= end) return 0;
            const char *stop = p++;
            if (depth == 1 && p < end && *p == ':' && (uint32_t) (stop - start) == key.len
                && memcmp(start, key.ptr, key.len) == 0) {
                const char *v = ++p;
                int d = 0, in_string = 0;
                for (; p < end; p++) {
                    if (in_string) { if (*p == '\\') p++; else if (*p == '"') in_string = 0; continue; }
                    if (*p == '"') in_string = 1;
                    else if (*p == '{' || *p == '[') d++;
                    else if (*p == '}' || *p == ']') { if (d == 0) break; d--; }
                    else if (*p == ',' && d == 0) break;
                }
                value->ptr = v;
                value->len = (uint32_t) (p - v);
                return 1;
            }
            continue;
        }
        if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') depth--;
        p++;
    }
    return 0;
}

__attribute__((export_name("handle"))) int32_t handle(int32_t req_len) {
    thr_reset();
    thr_request req;
    if (thr_read_request((uint32_t) req_len, &req)) return thr_fail("the request could not be read");
    thr_str result;
    int32_t code = thr_call("revenue_by_region", "{}", 2, &result);
    if (code != 0) return code; /* the request fails as the call did */
    if (!result.ptr) return thr_fail("out of memory for the call's result");
    thr_http_header("content-type", "application/json");
    if (req.route == 0) { /* GET /revenue */
        thr_http_body(result.ptr, result.len);
        return 0;
    }
    thr_str region, value;
    if (!thr_param(&req, "region", &region)) return thr_fail("route 1 has a {region}");
    if (!member(result, region, &value)) {
        thr_http_status(404);
        thr_http_body_str("{\"error\": {\"message\": \"no revenue for this region\", \"region\": ");
        thr_http_body_json_string(region.ptr, region.len);
        thr_http_body_str("}}");
        return 0;
    }
    thr_http_body(value.ptr, value.len);
    return 0;
}
