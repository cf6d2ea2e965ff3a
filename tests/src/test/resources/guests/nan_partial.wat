;; nan_partial: a partial value the host carries but the coordinator must refuse (PARTIAL_NON_NUMERIC).
;;
;;   run     emits   p<partition>/x = NaN   (0.0 / 0.0)
;;   reduce  writes  {"entries": <number of partials>}
;;
;; Spliced after prelude.wat (imports, memory, input readers, key and result helpers).

  (data (i32.const 1024) "x")         ;; 1 byte: the key suffix
  (data (i32.const 1032) "entries")   ;; 7 bytes: the result's key

  (func (export "run") (param $batch_len i32) (param $args_len i32) (result i32)
    (if (call $read_batch (local.get $batch_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (if (call $emit_key (call $put_text (call $key_start) (i32.const 1024) (i32.const 1))
                        (f64.div (f64.const 0) (f64.const 0)))
      (then (return (call $fail_with (global.get $msg_emit_refused)))))
    (i32.const 0))

  (func (export "reduce") (param $partials_len i32) (param $args_len i32) (result i32)
    (if (call $read_partials (local.get $partials_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (call $write_one_integer (i32.const 1032) (i32.const 7) (i64.extend_i32_u (global.get $partial_count)))
    (i32.const 0))
