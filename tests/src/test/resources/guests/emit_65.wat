;; emit_65: one emit more than an invocation may make (limits.emitsPerInvocation = 64).
;;
;;   run     emits   p<partition>/k0 .. p<partition>/k64 = 1   (65 distinct keys); the host refuses
;;           the 65th, the run fails with EMIT_LIMIT_EXCEEDED, and the guest returns at once
;;   reduce  writes  {"entries": <number of partials>}
;;
;; Spliced after prelude.wat (imports, memory, input readers, key and result helpers).

  (data (i32.const 1024) "k")         ;; 1 byte: the key's stem
  (data (i32.const 1032) "entries")   ;; 7 bytes: the result's key

  (func (export "run") (param $batch_len i32) (param $args_len i32) (result i32)
    (local $i i32)
    (if (call $read_batch (local.get $batch_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (loop $next
      (if (call $emit_key (call $put_decimal (call $put_text (call $key_start) (i32.const 1024) (i32.const 1))
                                             (local.get $i))
                          (f64.const 1))
        (then (return (call $fail_with (global.get $msg_emit_refused)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $next (i32.lt_u (local.get $i) (i32.const 65))))
    (i32.const 0))

  (func (export "reduce") (param $partials_len i32) (param $args_len i32) (result i32)
    (if (call $read_partials (local.get $partials_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (call $write_one_integer (i32.const 1032) (i32.const 7) (i64.extend_i32_u (global.get $partial_count)))
    (i32.const 0))
