;; nul_key: every partition emits the same key holding a NUL byte ("to\0tal"), which the coordinator must
;; refuse (PARTIAL_KEY_DUPLICATED) and whose failure message, quoting the key, the control database must
;; still be able to store.
;;
;;   run     emits   to\0tal = the batch's row count
;;   reduce  writes  {"entries": <number of partials>}
;;
;; Spliced after prelude.wat (imports, memory, input readers, key and result helpers).

  (data (i32.const 1024) "to\00tal")  ;; 6 bytes: the key
  (data (i32.const 1032) "entries")   ;; 7 bytes: the result's key

  (func (export "run") (param $batch_len i32) (param $args_len i32) (result i32)
    (if (call $read_batch (local.get $batch_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (if (call $emit (i32.const 1024) (i32.const 6) (f64.convert_i32_u (global.get $rows)))
      (then (return (call $fail_with (global.get $msg_emit_refused)))))
    (i32.const 0))

  (func (export "reduce") (param $partials_len i32) (param $args_len i32) (result i32)
    (if (call $read_partials (local.get $partials_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (call $write_one_integer (i32.const 1032) (i32.const 7) (i64.extend_i32_u (global.get $partial_count)))
    (i32.const 0))
