;; reduce_trap: every run succeeds, the reduce traps (GUEST_TRAP).
;;
;;   run     emits   p<partition>/rows = the batch's row count   (as row_count.wat)
;;   reduce  reads its input, then executes unreachable
;;
;; Spliced after prelude.wat (imports, memory, input readers, key and result helpers).

  (data (i32.const 1024) "rows")   ;; 4 bytes: the key suffix

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
    unreachable)
