;; contract_handler: the HTTP handler HandlerIT deploys (HTTP handler ABI 1, docs/guest-abi.md section 8).
;; It reads the whole request from fd 0, then acts by the matched route's index (bytes 4..8 of the request):
;;
;;   0  GET  /revenue                  calls revenue_by_region({}), answers its result as application/json;
;;                                     a failed call's code is returned, so the request fails as the call did
;;   1  POST /echo/{a}/{b}             answers the request's own bytes (application/octet-stream)
;;   2  GET  /twice                    calls revenue_by_region twice; returns the second call's code
;;   3  GET  /twice/seen               calls twice; answers 200 with what fd 0 yields after the second call
;;                                     (the error object), or fails 97 when that call did not return 3012
;;   4  GET  /trap                     unreachable
;;   5  GET  /slow                     as 0, calling handler_it_spin (whose run never ends)
;;   6  GET  /pinned                   as 0, calling revenue_by_region@999999 (a version it does not have)
;;   7  GET  /fails                    fail("handler says no"), returns 1
;;   8  GET  /regions/{region}/revenue as 1
;;
;; Memory: 0..16 fd_read scratch; 64.. constants; 65536.. the request; 2 MiB.. a call's outcome.
(module
  (import "wasi_snapshot_preview1" "fd_read"
    (func $fd_read (param $fd i32) (param $iovs i32) (param $iovs_len i32) (param $nread i32) (result i32)))
  (import "thresher" "http_status" (func $status (param i32)))
  (import "thresher" "http_header" (func $header (param i32 i32 i32 i32)))
  (import "thresher" "http_body" (func $body (param i32 i32)))
  (import "thresher" "call" (func $call (param i32 i32 i32 i32) (result i32)))
  (import "thresher" "call_result_len" (func $result_len (result i32)))
  (import "thresher" "fail" (func $fail (param i32 i32)))

  (memory (export "memory") 64 64)

  (data (i32.const 64) "revenue_by_region")           ;; 17
  (data (i32.const 96) "{}")                          ;; 2
  (data (i32.const 128) "content-type")               ;; 12
  (data (i32.const 160) "application/json")           ;; 16
  (data (i32.const 192) "application/octet-stream")   ;; 24
  (data (i32.const 256) "handler_it_spin")            ;; 15
  (data (i32.const 512) "revenue_by_region@999999")   ;; 24
  (data (i32.const 576) "handler says no")            ;; 15

  (global $request i32 (i32.const 65536))
  (global $outcome i32 (i32.const 2097152))

  (func (export "thresher_handler_abi_version") (result i32) (i32.const 1))

  ;; read exactly $n bytes of fd 0 to $dest: 0 ok, 1 the input ended first
  (func $read (param $dest i32) (param $n i32) (result i32)
    (local $got i32)
    (block $done
      (loop $more
        (br_if $done (i32.ge_u (local.get $got) (local.get $n)))
        (i32.store (i32.const 0) (i32.add (local.get $dest) (local.get $got)))
        (i32.store (i32.const 4) (i32.sub (local.get $n) (local.get $got)))
        (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)) (then (return (i32.const 1))))
        (if (i32.eqz (i32.load (i32.const 8))) (then (return (i32.const 1))))
        (local.set $got (i32.add (local.get $got) (i32.load (i32.const 8))))
        (br $more)))
    (i32.const 0))

  ;; one nested call of the binding named at $desc with {}; its outcome read to $outcome: returns its code
  (func $call_and_read (param $desc i32) (param $len i32) (result i32)
    (local $code i32)
    (local.set $code (call $call (local.get $desc) (local.get $len) (i32.const 96) (i32.const 2)))
    (if (call $read (global.get $outcome) (call $result_len)) (then (return (i32.const 99))))
    (local.get $code))

  ;; a call whose result is the answer, or whose failure is the request's
  (func $proxy (param $desc i32) (param $len i32) (result i32)
    (local $code i32)
    (local.set $code (call $call_and_read (local.get $desc) (local.get $len)))
    (if (local.get $code) (then (return (local.get $code))))
    (call $header (i32.const 128) (i32.const 12) (i32.const 160) (i32.const 16))
    (call $body (global.get $outcome) (call $result_len))
    (i32.const 0))

  (func $echo (param $len i32) (result i32)
    (call $header (i32.const 128) (i32.const 12) (i32.const 192) (i32.const 24))
    (call $body (global.get $request) (local.get $len))
    (i32.const 0))

  (func (export "handle") (param $len i32) (result i32)
    (local $code i32)
    (if (call $read (global.get $request) (local.get $len)) (then (return (i32.const 98))))
    (block $r8 (block $r7 (block $r6 (block $r5 (block $r4 (block $r3 (block $r2 (block $r1 (block $r0
      (br_table $r0 $r1 $r2 $r3 $r4 $r5 $r6 $r7 $r8 (i32.load (i32.add (global.get $request) (i32.const 4)))))
      (return (call $proxy (i32.const 64) (i32.const 17))))                       ;; 0 /revenue
      (return (call $echo (local.get $len))))                                     ;; 1 /echo/{a}/{b}
      (drop (call $call_and_read (i32.const 64) (i32.const 17)))                  ;; 2 /twice
      (return (call $call_and_read (i32.const 64) (i32.const 17))))
      (drop (call $call_and_read (i32.const 64) (i32.const 17)))                  ;; 3 /twice/seen
      (local.set $code (call $call_and_read (i32.const 64) (i32.const 17)))
      (if (i32.ne (local.get $code) (i32.const 3012)) (then (return (i32.const 97))))
      (call $status (i32.const 200))
      (call $header (i32.const 128) (i32.const 12) (i32.const 160) (i32.const 16))
      (call $body (global.get $outcome) (call $result_len))
      (return (i32.const 0)))
      unreachable)                                                                ;; 4 /trap
      (return (call $proxy (i32.const 256) (i32.const 15))))                      ;; 5 /slow
      (return (call $proxy (i32.const 512) (i32.const 24))))                      ;; 6 /pinned
      (call $fail (i32.const 576) (i32.const 15))                                 ;; 7 /fails
      (return (i32.const 1)))
    (call $echo (local.get $len)))                                                ;; 8 /regions/{region}/revenue
)
