;; prelude: what every contract test guest shares. Not a module on its own: ContractGuests builds
;; each guest as   (module  <this file>  <guests/NAME.wat>)   so a guest file holds only its own
;; constants, `run` and `reduce`. Speaks Thresher guest ABI v1 (docs/guest-abi.md).
;;
;; Every guest is bound with the selector   SELECT region, amount FROM orders
;; so every row batch has column 0 "region" (TEXT, not null) and column 1 "amount" (FLOAT64, not null).
;; Both exports first read their whole input from fd 0 ($read_batch, $read_partials), then act.
;;
;; Memory layout (one 64 KiB page of fixed data, then the input):
;;        0 ..    16   fd_read scratch: iovec {buf, len} at 0, bytes read at 8
;;      256 ..   280   the expected column descriptors of the batch header
;;      512 ..  1024   failure messages, NUL-terminated, one per 128 bytes
;;     1024 ..  2048   the guest file's own constants
;;     4096 ..  8192   the key being built for emit
;;    65536 ..         the input (batch or partials, then arguments)

  ;; ---- imports: the host's ABI v1 functions, and WASI for fd 0 -----------------------------
  (import "thresher" "emit" (func $emit (param $key_ptr i32) (param $key_len i32) (param $value f64) (result i32)))
  (import "thresher" "fail" (func $fail (param $msg_ptr i32) (param $msg_len i32)))
  (import "thresher" "json_begin_object" (func $json_begin_object))
  (import "thresher" "json_end_object" (func $json_end_object))
  (import "thresher" "json_key" (func $json_key (param $ptr i32) (param $len i32)))
  (import "thresher" "json_integer" (func $json_integer (param $value i64)))
  (import "wasi_snapshot_preview1" "fd_read"
    (func $fd_read (param $fd i32) (param $iovs i32) (param $iovs_len i32) (param $nread i32) (result i32)))

  (memory (export "memory") 1)

  ;; header bytes 16..40 of every batch: descriptor "region" (type 3 TEXT, flags 0, name length 6),
  ;; descriptor "amount" (type 2 FLOAT64, flags 0, name length 6), 4 bytes of padding to 40
  (data (i32.const 256) "\03\00\06\00region\02\00\06\00amount\00\00\00\00")
  (data (i32.const 512) "input ended before the announced length\00")
  (data (i32.const 640) "batch is not TRB1 with columns region TEXT NOT NULL, amount FLOAT64 NOT NULL\00")
  (data (i32.const 768) "partials are not TPL1 or are truncated\00")
  (data (i32.const 896) "emit refused\00")

  (global $input i32 (i32.const 65536))
  (global $key i32 (i32.const 4096))
  (global $msg_emit_refused i32 (i32.const 896))

  ;; set by $read_batch
  (global $partition (mut i32) (i32.const 0))
  (global $rows (mut i32) (i32.const 0))
  ;; set by $read_partials
  (global $partial_count (mut i32) (i32.const 0))
  (global $partial_sum (mut f64) (f64.const 0))

  (func (export "thresher_abi_version") (result i32)
    (i32.const 1))

  ;; ---- input --------------------------------------------------------------------------------

  ;; fail(message) with a NUL-terminated message at $msg; returns 1, the status run/reduce then return
  (func $fail_with (param $msg i32) (result i32)
    (local $n i32)
    (block $done
      (loop $scan
        (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $msg) (local.get $n)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $scan)))
    (call $fail (local.get $msg) (local.get $n))
    (i32.const 1))

  ;; grow memory until [0, $end) is addressable; traps when the host refuses to grow it
  (func $ensure (param $end i32)
    (local $pages i32)
    (local.set $pages (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then unreachable)))))

  ;; read exactly $n bytes of fd 0 to $input (fd_read may return fewer per call); 0 = ok, else fail(...) and 1
  (func $read_input (param $n i32) (result i32)
    (local $got i32)
    (call $ensure (i32.add (global.get $input) (local.get $n)))
    (block $done
      (loop $more
        (br_if $done (i32.ge_u (local.get $got) (local.get $n)))
        (i32.store (i32.const 0) (i32.add (global.get $input) (local.get $got)))  ;; iovec.buf
        (i32.store (i32.const 4) (i32.sub (local.get $n) (local.get $got)))       ;; iovec.len
        (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8))
          (then (return (call $fail_with (i32.const 512)))))
        (if (i32.eqz (i32.load (i32.const 8)))
          (then (return (call $fail_with (i32.const 512)))))
        (local.set $got (i32.add (local.get $got) (i32.load (i32.const 8))))
        (br $more)))
    (i32.const 0))

  ;; run's input: reads the batch and the arguments, checks the header against the selector and sets
  ;; $partition and $rows; 0 = ok, else fail(...) and 1. Header: "TRB1", u32 partition, u32 rows R,
  ;; u32 columns = 2, then the 24 bytes at 256.
  (func $read_batch (param $batch_len i32) (param $args_len i32) (result i32)
    (local $b i32)
    (local.set $b (global.get $input))
    (if (call $read_input (i32.add (local.get $batch_len) (local.get $args_len)))
      (then (return (i32.const 1))))
    (if (i32.lt_u (local.get $batch_len) (i32.const 40))
      (then (return (call $fail_with (i32.const 640)))))
    (if (i32.or
          (i32.or (i32.ne (i32.load (local.get $b)) (i32.const 0x31425254))                 ;; "TRB1"
                  (i32.ne (i32.load offset=12 (local.get $b)) (i32.const 2)))
          (i32.or (i64.ne (i64.load offset=16 (local.get $b)) (i64.load (i32.const 256)))
                  (i32.or (i64.ne (i64.load offset=24 (local.get $b)) (i64.load (i32.const 264)))
                          (i64.ne (i64.load offset=32 (local.get $b)) (i64.load (i32.const 272))))))
      (then (return (call $fail_with (i32.const 640)))))
    (global.set $partition (i32.load offset=4 (local.get $b)))
    (global.set $rows (i32.load offset=8 (local.get $b)))
    (i32.const 0))

  ;; reduce's input: reads the partials and the arguments, walks every entry (u32 key length K, K key
  ;; bytes, f64 value, unaligned) and sets $partial_count and $partial_sum; 0 = ok, else fail(...) and 1
  (func $read_partials (param $partials_len i32) (param $args_len i32) (result i32)
    (local $p i32) (local $end i32) (local $i i32) (local $key_len i32)
    (if (call $read_input (i32.add (local.get $partials_len) (local.get $args_len)))
      (then (return (i32.const 1))))
    (if (i32.lt_u (local.get $partials_len) (i32.const 8))
      (then (return (call $fail_with (i32.const 768)))))
    (if (i32.ne (i32.load (global.get $input)) (i32.const 0x314C5054))                      ;; "TPL1"
      (then (return (call $fail_with (i32.const 768)))))
    (global.set $partial_count (i32.load offset=4 (global.get $input)))
    (global.set $partial_sum (f64.const 0))
    (local.set $end (i32.add (global.get $input) (local.get $partials_len)))
    (local.set $p (i32.add (global.get $input) (i32.const 8)))
    (block $all
      (loop $entry
        (br_if $all (i32.ge_u (local.get $i) (global.get $partial_count)))
        ;; at least 12 bytes left (length + value), and the key fits between them
        (if (i32.lt_u (i32.sub (local.get $end) (local.get $p)) (i32.const 12))
          (then (return (call $fail_with (i32.const 768)))))
        (local.set $key_len (i32.load (local.get $p)))
        (if (i32.gt_u (local.get $key_len) (i32.sub (i32.sub (local.get $end) (local.get $p)) (i32.const 12)))
          (then (return (call $fail_with (i32.const 768)))))
        (local.set $p (i32.add (local.get $p) (i32.add (i32.const 4) (local.get $key_len))))
        (global.set $partial_sum (f64.add (global.get $partial_sum) (f64.load (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 8)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $entry)))
    (if (i32.ne (local.get $p) (local.get $end))
      (then (return (call $fail_with (i32.const 768)))))
    (i32.const 0))

  ;; ---- output -------------------------------------------------------------------------------

  ;; copy $len bytes from $src to $at; returns the position after them
  (func $put_text (param $at i32) (param $src i32) (param $len i32) (result i32)
    (memory.copy (local.get $at) (local.get $src) (local.get $len))
    (i32.add (local.get $at) (local.get $len)))

  ;; write $v in decimal at $at; returns the position after the digits
  (func $put_decimal (param $at i32) (param $v i32) (result i32)
    (local $digits i32) (local $n i32) (local $end i32)
    (local.set $digits (i32.const 1))
    (local.set $n (local.get $v))
    (block $counted
      (loop $more
        (br_if $counted (i32.lt_u (local.get $n) (i32.const 10)))
        (local.set $n (i32.div_u (local.get $n) (i32.const 10)))
        (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
        (br $more)))
    (local.set $end (i32.add (local.get $at) (local.get $digits)))
    (local.set $n (local.get $end))
    (loop $digit
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (i32.store8 (local.get $n) (i32.add (i32.const 48) (i32.rem_u (local.get $v) (i32.const 10))))
      (local.set $v (i32.div_u (local.get $v) (i32.const 10)))
      (br_if $digit (i32.ne (local.get $n) (local.get $at))))
    (local.get $end))

  ;; start the key at $key with "p<partition>/"; returns the position after it
  (func $key_start (result i32)
    (local $at i32)
    (i32.store8 (global.get $key) (i32.const 112))                                         ;; 'p'
    (local.set $at (call $put_decimal (i32.add (global.get $key) (i32.const 1)) (global.get $partition)))
    (i32.store8 (local.get $at) (i32.const 47))                                            ;; '/'
    (i32.add (local.get $at) (i32.const 1)))

  ;; emit the key built at [$key, $end); returns emit's answer (0 accepted, 1 refused)
  (func $emit_key (param $end i32) (param $value f64) (result i32)
    (call $emit (global.get $key) (i32.sub (local.get $end) (global.get $key)) (local.get $value)))

  ;; write the result {"<key>": <value>} with the $len bytes at $name as the key
  (func $write_one_integer (param $name i32) (param $len i32) (param $value i64)
    (call $json_begin_object)
    (call $json_key (local.get $name) (local.get $len))
    (call $json_integer (local.get $value))
    (call $json_end_object))

  ;; write the result {}
  (func $write_empty_object
    (call $json_begin_object)
    (call $json_end_object))
