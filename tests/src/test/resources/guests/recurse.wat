;; recurse: a run that calls itself until the engine's stack runs out (GUEST_TRAP).
;;
;;   run     reads its input, then recurses without end
;;   reduce  writes  {}
;;
;; Spliced after prelude.wat (imports, memory, input readers, key and result helpers).

  (func $down (param $n i64) (result i64)
    (i64.add (call $down (i64.add (local.get $n) (i64.const 1))) (i64.const 1)))

  (func (export "run") (param $batch_len i32) (param $args_len i32) (result i32)
    (if (call $read_batch (local.get $batch_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (drop (call $down (i64.const 0)))
    (i32.const 0))

  (func (export "reduce") (param $partials_len i32) (param $args_len i32) (result i32)
    (if (call $read_partials (local.get $partials_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (call $write_empty_object)
    (i32.const 0))
