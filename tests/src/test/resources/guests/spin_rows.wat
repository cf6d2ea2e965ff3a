;; spin_rows: spins only where it is given rows, so bound to a selector matching rows of one shard it
;; holds a guest thread on that node alone until the deadline watchdog stops it (DEADLINE_EXCEEDED).
;;
;;   run     reads its input; loops forever if the batch has a row, else returns without emitting
;;   reduce  writes  {}
;;
;; Spliced after prelude.wat (imports, memory, input readers, key and result helpers).

  (func (export "run") (param $batch_len i32) (param $args_len i32) (result i32)
    (if (call $read_batch (local.get $batch_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (if (i32.eqz (global.get $rows))
      (then (return (i32.const 0))))
    (loop $forever
      (br $forever))
    (i32.const 0))   ;; never reached

  (func (export "reduce") (param $partials_len i32) (param $args_len i32) (result i32)
    (if (call $read_partials (local.get $partials_len) (local.get $args_len))
      (then (return (i32.const 1))))
    (call $write_empty_object)
    (i32.const 0))
