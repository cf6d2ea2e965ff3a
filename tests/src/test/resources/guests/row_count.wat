;; row_count: the well-behaved guest many contract tests use.
;;
;;   run     emits   p<partition>/rows = the batch's row count
;;   reduce  sums every partial's value and writes   {"rows": <integer>}
;;
;; Spliced after prelude.wat (imports, memory, input readers, key and result helpers).

  (data (i32.const 1024) "rows")   ;; 4 bytes: the key suffix and the result's key

  (func (export "run") (param $batch_len i32) (param $args_len i32) (result i32)
    (if (call $read_batch (local.get $batch_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (if (call $emit_key (call $put_text (call $key_start) (i32.const 1024) (i32.const 4))
                        (f64.convert_i32_u (global.get $rows)))
      (then (return (call $fail_with (global.get $msg_emit_refused)))))
    (i32.const 0))

  (func (export "reduce") (param $partials_len i32) (param $args_len i32) (result i32)
    (if (call $read_partials (local.get $partials_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (call $write_one_integer (i32.const 1024) (i32.const 4) (i64.trunc_sat_f64_s (global.get $partial_sum)))
    (i32.const 0))
