;; A test guest that does what its input tells it. run and reduce both read their whole input
;; (batch_len bytes, copied to address 1024) as a script of one-byte ops, most with an operand:
;;   'E' u32 n, n key bytes, f64   emit(key, value), result ignored
;;   'S' u32 n, n key bytes, f64   emit(key, value); return 0 at once when emit refuses
;;   'A'                           read the arguments (args_len bytes), emit(arguments, args_len)
;;   'F' u32 n, n bytes            fail(message), return 1
;;   'X' u32 status                return status
;;   'T' trap (unreachable)   'L' loop forever   'M' out-of-bounds load   'R' recurse forever
;;   '{' '}' '[' ']'               json_begin_object / end_object / begin_array / end_array
;;   'k' / 's' / 'r' u32 n, bytes  json_key / json_string / result_json
;;   'n' f64   'i' i64   'b' u32   'z'     json_number / json_integer / json_bool / json_null
;; The end of the script returns 0. Any other op traps.
(module
  (import "thresher" "emit" (func $emit (param i32 i32 f64) (result i32)))
  (import "thresher" "fail" (func $fail (param i32 i32)))
  (import "thresher" "json_begin_object" (func $json_begin_object))
  (import "thresher" "json_end_object" (func $json_end_object))
  (import "thresher" "json_begin_array" (func $json_begin_array))
  (import "thresher" "json_end_array" (func $json_end_array))
  (import "thresher" "json_key" (func $json_key (param i32 i32)))
  (import "thresher" "json_string" (func $json_string (param i32 i32)))
  (import "thresher" "json_number" (func $json_number (param f64)))
  (import "thresher" "json_integer" (func $json_integer (param i64)))
  (import "thresher" "json_bool" (func $json_bool (param i32)))
  (import "thresher" "json_null" (func $json_null))
  (import "thresher" "result_json" (func $result_json (param i32 i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $args_len (mut i32) (i32.const 0))

  (func (export "thresher_abi_version") (result i32) (i32.const @VERSION@))

  ;; grow memory so that [0, end) is addressable
  (func $ensure (param $end i32)
    (local $pages i32)
    (local.set $pages (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then unreachable)))))

  ;; read exactly n bytes of fd 0 to dest; the iovec lives at 0, nread at 8
  (func $read (param $dest i32) (param $n i32)
    (local $got i32)
    (call $ensure (i32.add (i32.add (local.get $dest) (local.get $n)) (i32.const 16)))
    (block $done
      (loop $more
        (br_if $done (i32.ge_u (local.get $got) (local.get $n)))
        (i32.store (i32.const 0) (i32.add (local.get $dest) (local.get $got)))
        (i32.store (i32.const 4) (i32.sub (local.get $n) (local.get $got)))
        (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)) (then unreachable))
        (if (i32.eqz (i32.load (i32.const 8))) (then unreachable))
        (local.set $got (i32.add (local.get $got) (i32.load (i32.const 8))))
        (br $more))))

  (func $recurse (param $depth i32) (result i32)
    (call $recurse (i32.add (local.get $depth) (i32.const 1))))

  (func $script (param $len i32) (param $args i32) (result i32)
    (local $p i32) (local $end i32) (local $op i32) (local $n i32)
    (global.set $args_len (local.get $args))
    (call $read (i32.const 1024) (local.get $len))
    (local.set $p (i32.const 1024))
    (local.set $end (i32.add (i32.const 1024) (local.get $len)))
    (block $out
      (loop $next
        (br_if $out (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $op (i32.load8_u (local.get $p)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        ;; the u32 operand, or a string operand's length
        (local.set $n (i32.load (local.get $p)))
        (if (i32.eq (local.get $op) (i32.const 69)) ;; 'E'
          (then
            (drop (call $emit (i32.add (local.get $p) (i32.const 4)) (local.get $n)
                    (f64.load (i32.add (i32.add (local.get $p) (i32.const 4)) (local.get $n)))))
            (local.set $p (i32.add (local.get $p) (i32.add (local.get $n) (i32.const 12))))
            (br $next)))
        (if (i32.eq (local.get $op) (i32.const 83)) ;; 'S'
          (then
            (if (call $emit (i32.add (local.get $p) (i32.const 4)) (local.get $n)
                    (f64.load (i32.add (i32.add (local.get $p) (i32.const 4)) (local.get $n))))
              (then (return (i32.const 0))))
            (local.set $p (i32.add (local.get $p) (i32.add (local.get $n) (i32.const 12))))
            (br $next)))
        (if (i32.eq (local.get $op) (i32.const 65)) ;; 'A'
          (then
            (call $read (local.get $end) (global.get $args_len))
            (drop (call $emit (local.get $end) (global.get $args_len) (f64.convert_i32_u (global.get $args_len))))
            (br $next)))
        (if (i32.eq (local.get $op) (i32.const 70)) ;; 'F'
          (then
            (call $fail (i32.add (local.get $p) (i32.const 4)) (local.get $n))
            (return (i32.const 1))))
        (if (i32.eq (local.get $op) (i32.const 88)) ;; 'X'
          (then (return (local.get $n))))
        (if (i32.eq (local.get $op) (i32.const 84)) ;; 'T'
          (then unreachable))
        (if (i32.eq (local.get $op) (i32.const 76)) ;; 'L'
          (then (loop $forever (br $forever))))
        (if (i32.eq (local.get $op) (i32.const 77)) ;; 'M'
          (then (drop (i32.load (i32.const -4)))))
        (if (i32.eq (local.get $op) (i32.const 82)) ;; 'R'
          (then (drop (call $recurse (i32.const 0)))))
        (if (i32.eq (local.get $op) (i32.const 123)) ;; '{'
          (then (call $json_begin_object) (br $next)))
        (if (i32.eq (local.get $op) (i32.const 125)) ;; '}'
          (then (call $json_end_object) (br $next)))
        (if (i32.eq (local.get $op) (i32.const 91)) ;; '['
          (then (call $json_begin_array) (br $next)))
        (if (i32.eq (local.get $op) (i32.const 93)) ;; ']'
          (then (call $json_end_array) (br $next)))
        (if (i32.eq (local.get $op) (i32.const 107)) ;; 'k'
          (then
            (call $json_key (i32.add (local.get $p) (i32.const 4)) (local.get $n))
            (local.set $p (i32.add (local.get $p) (i32.add (local.get $n) (i32.const 4))))
            (br $next)))
        (if (i32.eq (local.get $op) (i32.const 115)) ;; 's'
          (then
            (call $json_string (i32.add (local.get $p) (i32.const 4)) (local.get $n))
            (local.set $p (i32.add (local.get $p) (i32.add (local.get $n) (i32.const 4))))
            (br $next)))
        (if (i32.eq (local.get $op) (i32.const 114)) ;; 'r'
          (then
            (call $result_json (i32.add (local.get $p) (i32.const 4)) (local.get $n))
            (local.set $p (i32.add (local.get $p) (i32.add (local.get $n) (i32.const 4))))
            (br $next)))
        (if (i32.eq (local.get $op) (i32.const 110)) ;; 'n'
          (then
            (call $json_number (f64.load (local.get $p)))
            (local.set $p (i32.add (local.get $p) (i32.const 8)))
            (br $next)))
        (if (i32.eq (local.get $op) (i32.const 105)) ;; 'i'
          (then
            (call $json_integer (i64.load (local.get $p)))
            (local.set $p (i32.add (local.get $p) (i32.const 8)))
            (br $next)))
        (if (i32.eq (local.get $op) (i32.const 98)) ;; 'b'
          (then
            (call $json_bool (local.get $n))
            (local.set $p (i32.add (local.get $p) (i32.const 4)))
            (br $next)))
        (if (i32.eq (local.get $op) (i32.const 122)) ;; 'z'
          (then (call $json_null) (br $next)))
        unreachable))
    (i32.const 0))

  (func (export "run") (param $batch_len i32) (param $args_len i32) (result i32)
    (call $script (local.get $batch_len) (local.get $args_len)))

  (func (export "reduce") (param $partials_len i32) (param $args_len i32) (result i32)
    (call $script (local.get $partials_len) (local.get $args_len)))
)
