;; region_totals: row count and amount sum per partition and region, regions told apart by their length
;; (1 to 9 bytes), so that a whole-system test can check every partition's totals in one call.
;;
;;   run     per region length L present in the batch, emits   p<partition>/<L>c = number of rows
;;                                                             p<partition>/<L>s = sum of amount
;;   reduce  writes every partial as it came, its value as an integer:   {"p0/1c": 3, "p0/1s": 12, ...}
;;
;; Fails (GUEST_REPORTED_FAILURE) on a region of no byte or of more than 9, and on a batch whose sections do not
;; fit its length. Spliced after prelude.wat (imports, memory, input readers, key and result helpers).
;;
;; Memory of its own: 1024.. failure messages; 2048..2128 the count per length (f64, index L);
;; 2176..2256 the sum per length (f64, index L).

  (data (i32.const 1024) "a region is empty or longer than 9 bytes\00")
  (data (i32.const 1152) "batch size does not match its header\00")

  (global $counts i32 (i32.const 2048))
  (global $sums i32 (i32.const 2176))

  (func $pad8 (param $n i32) (result i32)
    (i32.and (i32.add (local.get $n) (i32.const 7)) (i32.const -8)))

  (func (export "run") (param $batch_len i32) (param $args_len i32) (result i32)
    (local $b i32) (local $offsets i32) (local $payload i32) (local $amounts i32) (local $r i32) (local $len i32)
    (local $at i32)
    (if (call $read_batch (local.get $batch_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (memory.fill (global.get $counts) (i32.const 0) (i32.const 80))
    (memory.fill (global.get $sums) (i32.const 0) (i32.const 80))
    (local.set $b (global.get $input))
    ;; region: R+1 u32 offsets at 40, then its payload; then amount: R f64
    (local.set $offsets (i32.add (local.get $b) (i32.const 40)))
    (local.set $payload (i32.add (local.get $offsets)
                                 (call $pad8 (i32.mul (i32.const 4) (i32.add (global.get $rows) (i32.const 1))))))
    (if (i32.gt_u (local.get $payload) (i32.add (local.get $b) (local.get $batch_len)))
      (then (return (call $fail_with (i32.const 1152)))))
    (local.set $amounts (i32.add (local.get $payload)
                                 (call $pad8 (i32.load (i32.add (local.get $offsets)
                                                                (i32.mul (i32.const 4) (global.get $rows)))))))
    (if (i32.ne (i32.add (local.get $amounts) (i32.mul (i32.const 8) (global.get $rows)))
                (i32.add (local.get $b) (local.get $batch_len)))
      (then (return (call $fail_with (i32.const 1152)))))
    (block $all
      (loop $row
        (br_if $all (i32.ge_u (local.get $r) (global.get $rows)))
        (local.set $len (i32.sub (i32.load offset=4 (i32.add (local.get $offsets) (i32.mul (i32.const 4) (local.get $r))))
                                 (i32.load (i32.add (local.get $offsets) (i32.mul (i32.const 4) (local.get $r))))))
        (if (i32.or (i32.eqz (local.get $len)) (i32.gt_u (local.get $len) (i32.const 9)))
          (then (return (call $fail_with (i32.const 1024)))))
        (local.set $at (i32.add (global.get $counts) (i32.mul (i32.const 8) (local.get $len))))
        (f64.store (local.get $at) (f64.add (f64.load (local.get $at)) (f64.const 1)))
        (local.set $at (i32.add (global.get $sums) (i32.mul (i32.const 8) (local.get $len))))
        (f64.store (local.get $at) (f64.add (f64.load (local.get $at))
                                            (f64.load (i32.add (local.get $amounts) (i32.mul (i32.const 8) (local.get $r))))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row)))
    (local.set $len (i32.const 1))
    (block $lengths
      (loop $length
        (br_if $lengths (i32.gt_u (local.get $len) (i32.const 9)))
        (if (f64.gt (f64.load (i32.add (global.get $counts) (i32.mul (i32.const 8) (local.get $len)))) (f64.const 0))
          (then
            ;; p<partition>/<L>c, then the same key ending in s
            (local.set $at (call $key_start))
            (i32.store8 (local.get $at) (i32.add (i32.const 48) (local.get $len)))
            (i32.store8 offset=1 (local.get $at) (i32.const 99))                                 ;; 'c'
            (if (call $emit_key (i32.add (local.get $at) (i32.const 2))
                                (f64.load (i32.add (global.get $counts) (i32.mul (i32.const 8) (local.get $len)))))
              (then (return (call $fail_with (global.get $msg_emit_refused)))))
            (i32.store8 offset=1 (local.get $at) (i32.const 115))                                ;; 's'
            (if (call $emit_key (i32.add (local.get $at) (i32.const 2))
                                (f64.load (i32.add (global.get $sums) (i32.mul (i32.const 8) (local.get $len)))))
              (then (return (call $fail_with (global.get $msg_emit_refused)))))))
        (local.set $len (i32.add (local.get $len) (i32.const 1)))
        (br $length)))
    (i32.const 0))

  (func (export "reduce") (param $partials_len i32) (param $args_len i32) (result i32)
    (local $p i32) (local $i i32) (local $key_len i32)
    ;; reads and checks the whole input first
    (if (call $read_partials (local.get $partials_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (call $json_begin_object)
    (local.set $p (i32.add (global.get $input) (i32.const 8)))
    (block $all
      (loop $entry
        (br_if $all (i32.ge_u (local.get $i) (global.get $partial_count)))
        (local.set $key_len (i32.load (local.get $p)))
        (call $json_key (i32.add (local.get $p) (i32.const 4)) (local.get $key_len))
        (local.set $p (i32.add (local.get $p) (i32.add (i32.const 4) (local.get $key_len))))
        (call $json_integer (i64.trunc_sat_f64_s (f64.load (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 8)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $entry)))
    (call $json_end_object)
    (i32.const 0))
