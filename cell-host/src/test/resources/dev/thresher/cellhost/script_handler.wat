;; script_handler: an HTTP handler (HTTP handler ABI 1) that runs the script in its request's body.
;; It reads the whole request (HTTP request v1) from fd 0, finds the body, then runs its ops in order:
;;
;;   'S' u32 status                  http_status(status)
;;   'H' u32 n, name, u32 m, value   http_header(name, value)
;;   'B' u32 n, bytes                http_body(bytes)
;;   'E'                             http_body(the whole request as read)
;;   'C' u32 n, descriptor, u32 m, args
;;                                   call(descriptor, args); then http_body(u32 code ++ what fd 0 yields after it)
;;   'X'                             return the last call's code
;;   'R' u32 v                       return v
;;   'F' u32 n, message              fail(message)
;;   'W' u32 n                       http_body(memory[0, n))
;;   'T'                             unreachable
;;   'L'                             loop forever
;;   end of the script               return 0
;;
;; Memory: 0..16 fd_read scratch; 16..20 a code; 65536.. the request; 2 MiB.. a call's outcome.
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

  (global $request i32 (i32.const 65536))
  (global $outcome i32 (i32.const 2097152))
  (global $last (mut i32) (i32.const 0))

  (func (export "thresher_handler_abi_version") (result i32) (i32.const 1))

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

  ;; the offset after a str at $at
  (func $skip_str (param $at i32) (result i32)
    (i32.add (i32.add (local.get $at) (i32.const 4)) (i32.load (local.get $at))))

  ;; the offset after a pair list at $at
  (func $skip_pairs (param $at i32) (result i32)
    (local $n i32)
    (local.set $n (i32.load (local.get $at)))
    (local.set $at (i32.add (local.get $at) (i32.const 4)))
    (block $done
      (loop $pair
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $at (call $skip_str (call $skip_str (local.get $at))))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $pair)))
    (local.get $at))

  (func (export "handle") (param $len i32) (result i32)
    (local $at i32) (local $end i32) (local $op i32) (local $n i32) (local $m i32)
    (if (call $read (global.get $request) (local.get $len)) (then (return (i32.const 98))))
    ;; magic, route index, method, path, route, parameters, query, headers: then the body
    (local.set $at (i32.add (global.get $request) (i32.const 8)))
    (local.set $at (call $skip_str (call $skip_str (call $skip_str (local.get $at)))))
    (local.set $at (call $skip_pairs (call $skip_pairs (call $skip_pairs (local.get $at)))))
    (local.set $end (i32.add (i32.add (local.get $at) (i32.const 4)) (i32.load (local.get $at))))
    (local.set $at (i32.add (local.get $at) (i32.const 4)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $at) (local.get $end)))
        (local.set $op (i32.load8_u (local.get $at)))
        (local.set $at (i32.add (local.get $at) (i32.const 1)))
        (if (i32.eq (local.get $op) (i32.const 83)) (then                                 ;; 'S'
          (call $status (i32.load (local.get $at)))
          (local.set $at (i32.add (local.get $at) (i32.const 4)))
          (br $next)))
        (if (i32.eq (local.get $op) (i32.const 72)) (then                                 ;; 'H'
          (local.set $n (i32.load (local.get $at)))
          (local.set $m (i32.load (i32.add (local.get $at) (i32.add (i32.const 4) (local.get $n)))))
          (call $header (i32.add (local.get $at) (i32.const 4)) (local.get $n)
                        (i32.add (local.get $at) (i32.add (i32.const 8) (local.get $n))) (local.get $m))
          (local.set $at (i32.add (local.get $at) (i32.add (i32.const 8) (i32.add (local.get $n) (local.get $m)))))
          (br $next)))
        (if (i32.eq (local.get $op) (i32.const 66)) (then                                 ;; 'B'
          (local.set $n (i32.load (local.get $at)))
          (call $body (i32.add (local.get $at) (i32.const 4)) (local.get $n))
          (local.set $at (i32.add (local.get $at) (i32.add (i32.const 4) (local.get $n))))
          (br $next)))
        (if (i32.eq (local.get $op) (i32.const 69)) (then                                 ;; 'E'
          (call $body (global.get $request) (local.get $len))
          (br $next)))
        (if (i32.eq (local.get $op) (i32.const 67)) (then                                 ;; 'C'
          (local.set $n (i32.load (local.get $at)))
          (local.set $m (i32.load (i32.add (local.get $at) (i32.add (i32.const 4) (local.get $n)))))
          (global.set $last (call $call (i32.add (local.get $at) (i32.const 4)) (local.get $n)
                                        (i32.add (local.get $at) (i32.add (i32.const 8) (local.get $n))) (local.get $m)))
          (local.set $at (i32.add (local.get $at) (i32.add (i32.const 8) (i32.add (local.get $n) (local.get $m)))))
          (i32.store (i32.const 16) (global.get $last))
          (call $body (i32.const 16) (i32.const 4))
          (local.set $n (call $result_len))
          (if (call $read (global.get $outcome) (local.get $n)) (then (return (i32.const 99))))
          (call $body (global.get $outcome) (local.get $n))
          (br $next)))
        (if (i32.eq (local.get $op) (i32.const 88)) (then                                 ;; 'X'
          (return (global.get $last))))
        (if (i32.eq (local.get $op) (i32.const 82)) (then                                 ;; 'R'
          (return (i32.load (local.get $at)))))
        (if (i32.eq (local.get $op) (i32.const 70)) (then                                 ;; 'F'
          (local.set $n (i32.load (local.get $at)))
          (call $fail (i32.add (local.get $at) (i32.const 4)) (local.get $n))
          (local.set $at (i32.add (local.get $at) (i32.add (i32.const 4) (local.get $n))))
          (br $next)))
        (if (i32.eq (local.get $op) (i32.const 87)) (then                                 ;; 'W'
          (call $body (i32.const 0) (i32.load (local.get $at)))
          (local.set $at (i32.add (local.get $at) (i32.const 4)))
          (br $next)))
        (if (i32.eq (local.get $op) (i32.const 84)) (then unreachable))                  ;; 'T'
        (if (i32.eq (local.get $op) (i32.const 76)) (then (loop $forever (br $forever)))) ;; 'L'
        (return (i32.const 96))))                                                         ;; an unknown op
    (i32.const 0))
)
