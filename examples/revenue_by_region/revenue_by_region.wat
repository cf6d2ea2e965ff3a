;; revenue_by_region: revenue sum and order count per region.
;;
;; Bound with the selector   SELECT region, amount FROM orders
;; so every row batch has column 0 "region" (TEXT, not null) and column 1 "amount" (FLOAT64, not null).
;; Speaks Thresher guest ABI v2 (docs/guest-abi.md): run reads its partition as a stream of batches,
;; so a partition of any size goes through one batch's worth of memory.
;;
;;   run     per region present in the batch, emits   p<partition>/<region>/sum   = sum of amount
;;                                                    p<partition>/<region>/count = number of rows
;;   reduce  adds the partials up per region and writes
;;           {"<region>": {"sum": <number>, "count": <integer>}, ...}   regions in ascending byte order
;;
;; The arguments are read (the ABI hands them over first) and ignored.
;;
;; Memory layout (one 64 KiB page of fixed data, then the input):
;;        0 ..    16   fd_read scratch: iovec {buf, len} at 0, bytes read at 8
;;      256 ..   512   column and suffix names
;;      512 ..  1536   failure messages, NUL-terminated, one per 128 bytes
;;     4096 ..  8192   the key being built for emit
;;    65536 ..         the input (batch or partials, then arguments), then the region table
;;                     (24 bytes per region: region ptr, region len, sum f64, count f64),
;;                     then (reduce only) the table's entries as pointers, sorted.
(module
  ;; ---- imports: the host's ABI functions, and WASI for fd 0 -----------------------------
  (import "thresher" "emit" (func $emit (param $key_ptr i32) (param $key_len i32) (param $value f64) (result i32)))
  (import "thresher" "fail" (func $fail (param $msg_ptr i32) (param $msg_len i32)))
  (import "thresher" "json_begin_object" (func $json_begin_object))
  (import "thresher" "json_end_object" (func $json_end_object))
  (import "thresher" "json_key" (func $json_key (param $ptr i32) (param $len i32)))
  (import "thresher" "json_number" (func $json_number (param $value f64)))
  (import "thresher" "json_integer" (func $json_integer (param $value i64)))
  (import "wasi_snapshot_preview1" "fd_read"
    (func $fd_read (param $fd i32) (param $iovs i32) (param $iovs_len i32) (param $nread i32) (result i32)))

  ;; at most 16 MiB (256 pages): the input area, one batch of at most 8 MiB, and the tables. A cell reserves its
  ;; memory maximum against the node's guest memory budget, so a guest declares one it can live within.
  (memory (export "memory") 1 256)

  ;; ---- constant data ------------------------------------------------------------------------
  (data (i32.const 256) "region")   ;; 6 bytes
  (data (i32.const 264) "amount")   ;; 6 bytes
  (data (i32.const 272) "sum")      ;; 3 bytes
  (data (i32.const 280) "count")    ;; 5 bytes
  (data (i32.const 512) "input ended before the announced length\00")
  (data (i32.const 640) "batch is not TRB1 with columns region TEXT NOT NULL, amount FLOAT64 NOT NULL\00")
  (data (i32.const 768) "batch size does not match its header\00")
  (data (i32.const 896) "more than 32 regions in one partition (2 emits each, limit 64)\00")
  (data (i32.const 1024) "region longer than 1000 bytes\00")
  (data (i32.const 1152) "emit refused\00")
  (data (i32.const 1280) "partials are not TPL1 or are truncated\00")
  (data (i32.const 1408) "unknown partial key shape: expected <prefix>/<region>/sum or /count\00")

  (global $input i32 (i32.const 65536))
  (global $key i32 (i32.const 4096))
  ;; run: at most 32 regions, since each costs 2 of the 64 emits an invocation may make
  (global $run_max_regions i32 (i32.const 32))
  ;; run: the region table (32 x 24 bytes) and the regions' names (32 x at most 1000 bytes)
  (global $run_table i32 (i32.const 8192))
  (global $run_names i32 (i32.const 9216))
  (global $table (mut i32) (i32.const 0))
  (global $entries (mut i32) (i32.const 0))

  (func (export "thresher_abi_version") (result i32)
    (i32.const 2))

  ;; ---- helpers ------------------------------------------------------------------------------

  ;; fail(message) with a NUL-terminated message at $msg; returns the status run/reduce should return
  (func $fail_with (param $msg i32) (result i32)
    (local $n i32)
    (block $done
      (loop $scan
        (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $msg) (local.get $n)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $scan)))
    (call $fail (local.get $msg) (local.get $n))
    (i32.const 1))

  (func $pad8 (param $n i32) (result i32)
    (i32.and (i32.add (local.get $n) (i32.const 7)) (i32.const -8)))

  ;; grow memory until [0, $end) is addressable; traps when the host refuses to grow it
  (func $ensure (param $end i32)
    (local $pages i32)
    (local.set $pages (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then unreachable)))))

  ;; read exactly $n bytes of fd 0 to $dest (fd_read may return fewer per call); 0 = ok, 1 = input ended early
  (func $read_input (param $dest i32) (param $n i32) (result i32)
    (local $got i32)
    (call $ensure (i32.add (local.get $dest) (local.get $n)))
    (block $done
      (loop $more
        (br_if $done (i32.ge_u (local.get $got) (local.get $n)))
        (i32.store (i32.const 0) (i32.add (local.get $dest) (local.get $got)))  ;; iovec.buf
        (i32.store (i32.const 4) (i32.sub (local.get $n) (local.get $got)))     ;; iovec.len
        (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8))
          (then (return (i32.const 1))))
        (if (i32.eqz (i32.load (i32.const 8)))
          (then (return (i32.const 1))))
        (local.set $got (i32.add (local.get $got) (i32.load (i32.const 8))))
        (br $more)))
    (i32.const 0))

  ;; compare two byte strings as unsigned bytes: -1, 0 or 1
  (func $compare (param $a i32) (param $a_len i32) (param $b i32) (param $b_len i32) (result i32)
    (local $i i32) (local $n i32) (local $x i32) (local $y i32)
    (local.set $n (select (local.get $a_len) (local.get $b_len) (i32.lt_u (local.get $a_len) (local.get $b_len))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $x (i32.load8_u (i32.add (local.get $a) (local.get $i))))
        (local.set $y (i32.load8_u (i32.add (local.get $b) (local.get $i))))
        (if (i32.lt_u (local.get $x) (local.get $y)) (then (return (i32.const -1))))
        (if (i32.gt_u (local.get $x) (local.get $y)) (then (return (i32.const 1))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (if (i32.lt_u (local.get $a_len) (local.get $b_len)) (then (return (i32.const -1))))
    (if (i32.gt_u (local.get $a_len) (local.get $b_len)) (then (return (i32.const 1))))
    (i32.const 0))

  ;; whether two byte strings of $len bytes each are equal: eight bytes at a time, then byte by byte
  (func $same (param $a i32) (param $b i32) (param $len i32) (result i32)
    (local $i i32)
    (block $tail
      (loop $words
        (br_if $tail (i32.gt_u (i32.add (local.get $i) (i32.const 8)) (local.get $len)))
        (if (i64.ne (i64.load (i32.add (local.get $a) (local.get $i))) (i64.load (i32.add (local.get $b) (local.get $i))))
          (then (return (i32.const 0))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $words)))
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (if (i32.ne (i32.load8_u (i32.add (local.get $a) (local.get $i))) (i32.load8_u (i32.add (local.get $b) (local.get $i))))
          (then (return (i32.const 0))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $bytes)))
    (i32.const 1))

  ;; the region table entry for this region: found, or appended when fewer than $max exist; 0 when full.
  ;; Looked up once per row: an entry of another length is passed over without reading its bytes.
  (func $entry (param $ptr i32) (param $len i32) (param $max i32) (result i32)
    (local $i i32) (local $e i32)
    (block $absent
      (loop $next
        (br_if $absent (i32.ge_u (local.get $i) (global.get $entries)))
        (local.set $e (i32.add (global.get $table) (i32.mul (local.get $i) (i32.const 24))))
        (if (i32.eq (i32.load offset=4 (local.get $e)) (local.get $len))
          (then (if (call $same (local.get $ptr) (i32.load (local.get $e)) (local.get $len))
                  (then (return (local.get $e))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (if (i32.ge_u (global.get $entries) (local.get $max)) (then (return (i32.const 0))))
    (local.set $e (i32.add (global.get $table) (i32.mul (global.get $entries) (i32.const 24))))
    (i32.store (local.get $e) (local.get $ptr))
    (i32.store offset=4 (local.get $e) (local.get $len))
    (f64.store offset=8 (local.get $e) (f64.const 0))
    (f64.store offset=16 (local.get $e) (f64.const 0))
    (global.set $entries (i32.add (global.get $entries) (i32.const 1)))
    (local.get $e))

  ;; write $v in decimal at $dest; returns the number of digits
  (func $write_decimal (param $dest i32) (param $v i32) (result i32)
    (local $digits i32) (local $n i32) (local $at i32)
    (local.set $digits (i32.const 1))
    (local.set $n (local.get $v))
    (block $counted
      (loop $more
        (br_if $counted (i32.lt_u (local.get $n) (i32.const 10)))
        (local.set $n (i32.div_u (local.get $n) (i32.const 10)))
        (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
        (br $more)))
    (local.set $at (i32.add (local.get $dest) (local.get $digits)))
    (loop $digit
      (local.set $at (i32.sub (local.get $at) (i32.const 1)))
      (i32.store8 (local.get $at) (i32.add (i32.const 48) (i32.rem_u (local.get $v) (i32.const 10))))
      (local.set $v (i32.div_u (local.get $v) (i32.const 10)))
      (br_if $digit (i32.ne (local.get $at) (local.get $dest))))
    (local.get $digits))

  ;; build "p<partition>/<region>/<suffix>" at $key and emit it; returns emit's answer
  (func $emit_key (param $partition i32) (param $region i32) (param $region_len i32)
                  (param $suffix i32) (param $suffix_len i32) (param $value f64) (result i32)
    (local $at i32)
    (i32.store8 (global.get $key) (i32.const 112))                                        ;; 'p'
    (local.set $at (i32.add (global.get $key) (i32.const 1)))
    (local.set $at (i32.add (local.get $at) (call $write_decimal (local.get $at) (local.get $partition))))
    (i32.store8 (local.get $at) (i32.const 47))                                           ;; '/'
    (local.set $at (i32.add (local.get $at) (i32.const 1)))
    (memory.copy (local.get $at) (local.get $region) (local.get $region_len))
    (local.set $at (i32.add (local.get $at) (local.get $region_len)))
    (i32.store8 (local.get $at) (i32.const 47))                                           ;; '/'
    (local.set $at (i32.add (local.get $at) (i32.const 1)))
    (memory.copy (local.get $at) (local.get $suffix) (local.get $suffix_len))
    (local.set $at (i32.add (local.get $at) (local.get $suffix_len)))
    (call $emit (global.get $key) (i32.sub (local.get $at) (global.get $key)) (local.get $value)))

  ;; ---- run ----------------------------------------------------------------------------------
  ;; fd 0 holds the arguments (args_len bytes), then the partition's batches, each as a frame:
  ;; u32 length, then a row batch v1 of that many bytes; a length of 0 ends them (guest ABI v2, paged
  ;; input). Each batch is read over the last one at $batch; the region table and the region names
  ;; it holds are kept apart, so they outlive the batch they were first seen in.
  ;;
  ;; Batch layout for this selector (docs/guest-abi.md, row batch v1), from the batch start b:
  ;;   b+0   "TRB1"   b+4 partition id   b+8 rows R   b+12 columns = 2
  ;;   b+16  descriptor 0: 03 00 06 00 "region"      (TEXT, not nullable, name length 6)
  ;;   b+26  descriptor 1: 02 00 06 00 "amount"      (FLOAT64, not nullable, name length 6)
  ;;   b+40  region offsets: (R+1) x u32, padded to 8; then the region bytes, padded to 8
  ;;   then  amounts: R x f64; the batch ends there
  (func (export "run") (param $args_len i32) (result i32)
    (local $b i32) (local $batch_len i32) (local $partition i32) (local $status i32)
    (local $i i32) (local $e i32)
    (if (call $read_input (global.get $input) (local.get $args_len))
      (then (return (call $fail_with (i32.const 512)))))
    (local.set $b (call $pad8 (i32.add (global.get $input) (local.get $args_len))))
    (global.set $table (global.get $run_table))
    (global.set $entries (i32.const 0))

    ;; every batch of the partition, folded into the one table
    (block $batches_done
      (loop $batch
        (if (call $read_input (i32.const 16) (i32.const 4))
          (then (return (call $fail_with (i32.const 512)))))
        (local.set $batch_len (i32.load (i32.const 16)))
        (br_if $batches_done (i32.eqz (local.get $batch_len)))
        (if (i32.gt_u (local.get $batch_len) (i32.sub (i32.const -1) (local.get $b)))
          (then (return (call $fail_with (i32.const 768)))))
        (if (call $read_input (local.get $b) (local.get $batch_len))
          (then (return (call $fail_with (i32.const 512)))))
        (local.set $status (call $fold_batch (local.get $b) (local.get $batch_len)))
        (if (local.get $status) (then (return (local.get $status))))
        (local.set $partition (i32.load offset=4 (local.get $b)))
        (br $batch)))

    ;; two partials per region
    (block $emitted
      (loop $region
        (br_if $emitted (i32.ge_u (local.get $i) (global.get $entries)))
        (local.set $e (i32.add (global.get $table) (i32.mul (local.get $i) (i32.const 24))))
        (if (call $emit_key (local.get $partition) (i32.load (local.get $e)) (i32.load offset=4 (local.get $e))
                            (i32.const 272) (i32.const 3) (f64.load offset=8 (local.get $e)))
          (then (return (call $fail_with (i32.const 1152)))))
        (if (call $emit_key (local.get $partition) (i32.load (local.get $e)) (i32.load offset=4 (local.get $e))
                            (i32.const 280) (i32.const 5) (f64.load offset=16 (local.get $e)))
          (then (return (call $fail_with (i32.const 1152)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $region)))
    (i32.const 0))

  ;; checks one batch of $batch_len bytes at $b and adds its rows to the region table; 0 or a failure status
  (func $fold_batch (param $b i32) (param $batch_len i32) (result i32)
    (local $rows i32) (local $offsets i32) (local $payload i32) (local $amounts i32)
    (local $i i32) (local $start i32) (local $stop i32) (local $e i32) (local $before i32) (local $name i32)
    ;; header and column descriptors
    (if (i32.lt_u (local.get $batch_len) (i32.const 48))
      (then (return (call $fail_with (i32.const 640)))))
    (if (i32.or
          (i32.or (i32.ne (i32.load (local.get $b)) (i32.const 0x31425254))                ;; "TRB1"
                  (i32.ne (i32.load offset=12 (local.get $b)) (i32.const 2)))
          (i32.or (i32.ne (i32.load offset=16 (local.get $b)) (i32.const 0x00060003))       ;; 03 00 06 00
                  (i32.ne (i32.load offset=26 (local.get $b)) (i32.const 0x00060002))))     ;; 02 00 06 00
      (then (return (call $fail_with (i32.const 640)))))
    (if (i32.or (call $compare (i32.add (local.get $b) (i32.const 20)) (i32.const 6) (i32.const 256) (i32.const 6))
                (call $compare (i32.add (local.get $b) (i32.const 30)) (i32.const 6) (i32.const 264) (i32.const 6)))
      (then (return (call $fail_with (i32.const 640)))))
    (local.set $rows (i32.load offset=8 (local.get $b)))

    ;; section positions; every row needs at least its 8 amount bytes, which also bounds the arithmetic
    (if (i32.gt_u (local.get $rows) (i32.shr_u (local.get $batch_len) (i32.const 3)))
      (then (return (call $fail_with (i32.const 768)))))
    (local.set $offsets (i32.add (local.get $b) (i32.const 40)))
    (local.set $payload (i32.add (local.get $offsets)
                                 (call $pad8 (i32.shl (i32.add (local.get $rows) (i32.const 1)) (i32.const 2)))))
    (local.set $amounts (i32.add (local.get $payload)
                                 (call $pad8 (i32.load (i32.add (local.get $offsets) (i32.shl (local.get $rows) (i32.const 2)))))))
    (if (i32.ne (i32.add (local.get $amounts) (i32.shl (local.get $rows) (i32.const 3)))
                (i32.add (local.get $b) (local.get $batch_len)))
      (then (return (call $fail_with (i32.const 768)))))

    ;; sum and count per region; a region seen for the first time has its name copied out of the batch
    (block $rows_done
      (loop $row
        (br_if $rows_done (i32.ge_u (local.get $i) (local.get $rows)))
        (local.set $start (i32.load (i32.add (local.get $offsets) (i32.shl (local.get $i) (i32.const 2)))))
        (local.set $stop (i32.load offset=4 (i32.add (local.get $offsets) (i32.shl (local.get $i) (i32.const 2)))))
        (if (i32.gt_u (i32.sub (local.get $stop) (local.get $start)) (i32.const 1000))
          (then (return (call $fail_with (i32.const 1024)))))
        (local.set $before (global.get $entries))
        (local.set $e (call $entry (i32.add (local.get $payload) (local.get $start))
                                   (i32.sub (local.get $stop) (local.get $start))
                                   (global.get $run_max_regions)))
        (if (i32.eqz (local.get $e))
          (then (return (call $fail_with (i32.const 896)))))
        (if (i32.ne (local.get $before) (global.get $entries))
          (then
            (local.set $name (i32.add (global.get $run_names) (i32.mul (local.get $before) (i32.const 1000))))
            (memory.copy (local.get $name) (i32.load (local.get $e)) (i32.load offset=4 (local.get $e)))
            (i32.store (local.get $e) (local.get $name))))
        (f64.store offset=8 (local.get $e)
          (f64.add (f64.load offset=8 (local.get $e))
                   (f64.load (i32.add (local.get $amounts) (i32.shl (local.get $i) (i32.const 3))))))
        (f64.store offset=16 (local.get $e) (f64.add (f64.load offset=16 (local.get $e)) (f64.const 1)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $row)))
    (i32.const 0))

  ;; ---- reduce -------------------------------------------------------------------------------
  ;; Partials layout (partials v1): "TPL1", u32 count, then per entry u32 key length, key, f64 value.
  (func (export "reduce") (param $partials_len i32) (param $args_len i32) (result i32)
    (local $b i32) (local $end i32) (local $count i32) (local $p i32) (local $i i32)
    (local $key i32) (local $key_len i32) (local $value f64)
    (local $first i32) (local $last i32) (local $j i32)
    (local $suffix i32) (local $suffix_len i32) (local $e i32)
    (local $order i32) (local $x i32)
    (local.set $b (global.get $input))
    (if (call $read_input (local.get $b) (i32.add (local.get $partials_len) (local.get $args_len)))
      (then (return (call $fail_with (i32.const 512)))))
    (local.set $end (i32.add (local.get $b) (local.get $partials_len)))
    (if (i32.lt_u (local.get $partials_len) (i32.const 8))
      (then (return (call $fail_with (i32.const 1280)))))
    (if (i32.ne (i32.load (local.get $b)) (i32.const 0x314C5054))                             ;; "TPL1"
      (then (return (call $fail_with (i32.const 1280)))))
    (local.set $count (i32.load offset=4 (local.get $b)))
    ;; an entry takes at least 12 bytes: this bounds the count before it sizes the table
    (if (i32.gt_u (local.get $count) (i32.div_u (local.get $partials_len) (i32.const 12)))
      (then (return (call $fail_with (i32.const 1280)))))

    ;; table: at most one region per partial; the sort order array follows it
    (global.set $table (call $pad8 (i32.add (local.get $end) (local.get $args_len))))
    (global.set $entries (i32.const 0))
    (local.set $order (i32.add (global.get $table) (i32.mul (local.get $count) (i32.const 24))))
    (call $ensure (i32.add (local.get $order) (i32.shl (local.get $count) (i32.const 2))))

    (local.set $p (i32.add (local.get $b) (i32.const 8)))
    (block $all
      (loop $partial
        (br_if $all (i32.ge_u (local.get $i) (local.get $count)))
        ;; entry: u32 key length, key bytes, f64 value (unaligned)
        (if (i32.gt_u (i32.add (local.get $p) (i32.const 4)) (local.get $end))
          (then (return (call $fail_with (i32.const 1280)))))
        (local.set $key_len (i32.load (local.get $p)))
        (local.set $key (i32.add (local.get $p) (i32.const 4)))
        (if (i32.lt_u (i32.sub (local.get $end) (local.get $key)) (i32.const 8))
          (then (return (call $fail_with (i32.const 1280)))))
        (if (i32.gt_u (local.get $key_len) (i32.sub (i32.sub (local.get $end) (local.get $key)) (i32.const 8)))
          (then (return (call $fail_with (i32.const 1280)))))
        (local.set $value (f64.load (i32.add (local.get $key) (local.get $key_len))))
        (local.set $p (i32.add (i32.add (local.get $key) (local.get $key_len)) (i32.const 8)))

        ;; key = <prefix> '/' <region> '/' <suffix>: first and last '/'
        (local.set $first (i32.const -1))
        (local.set $last (i32.const -1))
        (local.set $j (i32.const 0))
        (block $scanned
          (loop $scan
            (br_if $scanned (i32.ge_u (local.get $j) (local.get $key_len)))
            (if (i32.eq (i32.load8_u (i32.add (local.get $key) (local.get $j))) (i32.const 47))  ;; '/'
              (then
                (if (i32.eq (local.get $first) (i32.const -1)) (then (local.set $first (local.get $j))))
                (local.set $last (local.get $j))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $scan)))
        (if (i32.or (i32.eq (local.get $first) (i32.const -1)) (i32.eq (local.get $first) (local.get $last)))
          (then (return (call $fail_with (i32.const 1408)))))
        (local.set $e (call $entry (i32.add (local.get $key) (i32.add (local.get $first) (i32.const 1)))
                                   (i32.sub (i32.sub (local.get $last) (local.get $first)) (i32.const 1))
                                   (local.get $count)))
        (local.set $suffix (i32.add (local.get $key) (i32.add (local.get $last) (i32.const 1))))
        (local.set $suffix_len (i32.sub (i32.sub (local.get $key_len) (local.get $last)) (i32.const 1)))
        (block $known
          (if (i32.eqz (call $compare (local.get $suffix) (local.get $suffix_len) (i32.const 272) (i32.const 3)))
            (then
              (f64.store offset=8 (local.get $e) (f64.add (f64.load offset=8 (local.get $e)) (local.get $value)))
              (br $known)))
          (if (i32.eqz (call $compare (local.get $suffix) (local.get $suffix_len) (i32.const 280) (i32.const 5)))
            (then
              (f64.store offset=16 (local.get $e) (f64.add (f64.load offset=16 (local.get $e)) (local.get $value)))
              (br $known)))
          (return (call $fail_with (i32.const 1408))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $partial)))
    (if (i32.ne (local.get $p) (local.get $end))
      (then (return (call $fail_with (i32.const 1280)))))

    ;; order the entries by region bytes: insertion sort of entry pointers
    (local.set $i (i32.const 0))
    (block $sorted
      (loop $insert
        (br_if $sorted (i32.ge_u (local.get $i) (global.get $entries)))
        (local.set $x (i32.add (global.get $table) (i32.mul (local.get $i) (i32.const 24))))
        (local.set $j (local.get $i))
        (block $placed
          (loop $shift
            (br_if $placed (i32.eqz (local.get $j)))
            (local.set $e (i32.load (i32.add (local.get $order) (i32.shl (i32.sub (local.get $j) (i32.const 1)) (i32.const 2)))))
            (br_if $placed (i32.le_s (call $compare (i32.load (local.get $e)) (i32.load offset=4 (local.get $e))
                                                    (i32.load (local.get $x)) (i32.load offset=4 (local.get $x)))
                                     (i32.const 0)))
            (i32.store (i32.add (local.get $order) (i32.shl (local.get $j) (i32.const 2))) (local.get $e))
            (local.set $j (i32.sub (local.get $j) (i32.const 1)))
            (br $shift)))
        (i32.store (i32.add (local.get $order) (i32.shl (local.get $j) (i32.const 2))) (local.get $x))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $insert)))

    ;; {"<region>": {"sum": <number>, "count": <integer>}, ...}; the host formats every value
    (call $json_begin_object)
    (local.set $i (i32.const 0))
    (block $written
      (loop $write
        (br_if $written (i32.ge_u (local.get $i) (global.get $entries)))
        (local.set $e (i32.load (i32.add (local.get $order) (i32.shl (local.get $i) (i32.const 2)))))
        (call $json_key (i32.load (local.get $e)) (i32.load offset=4 (local.get $e)))
        (call $json_begin_object)
        (call $json_key (i32.const 272) (i32.const 3))
        (call $json_number (f64.load offset=8 (local.get $e)))
        (call $json_key (i32.const 280) (i32.const 5))
        (call $json_integer (i64.trunc_sat_f64_s (f64.load offset=16 (local.get $e))))
        (call $json_end_object)
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $write)))
    (call $json_end_object)
    (i32.const 0))
)
