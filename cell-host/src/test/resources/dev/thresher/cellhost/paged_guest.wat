;; A guest of ABI v2 (paged input) that describes what it received. run reads the arguments, then the
;; frames (u32 length, that many bytes; a length of 0 ends them) and, per frame, emits
;; ("len", length) and ("sum", the sum of the frame's bytes); after the end frame it emits
;; ("frames", count). When the arguments' first byte is a digit d, it returns after d frames without
;; reading on. Input that ends early traps. reduce writes the number 0.
(module
  (import "thresher" "emit" (func $emit (param i32 i32 f64) (result i32)))
  (import "thresher" "json_integer" (func $json_integer (param i64)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 256) "len")
  (data (i32.const 260) "sum")
  (data (i32.const 264) "frames")

  (func (export "thresher_abi_version") (result i32) (i32.const @VERSION@))

  (func $ensure (param $end i32)
    (local $pages i32)
    (local.set $pages (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then unreachable)))))

  (func $read (param $dest i32) (param $n i32)
    (local $got i32)
    (call $ensure (i32.add (local.get $dest) (local.get $n)))
    (block $done
      (loop $more
        (br_if $done (i32.ge_u (local.get $got) (local.get $n)))
        (i32.store (i32.const 0) (i32.add (local.get $dest) (local.get $got)))
        (i32.store (i32.const 4) (i32.sub (local.get $n) (local.get $got)))
        (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)) (then unreachable))
        (if (i32.eqz (i32.load (i32.const 8))) (then unreachable))
        (local.set $got (i32.add (local.get $got) (i32.load (i32.const 8))))
        (br $more))))

  (func (export "run") (param $args_len i32) (result i32)
    (local $stop_after i32) (local $frames i32) (local $len i32) (local $i i32) (local $sum f64)
    (local.set $stop_after (i32.const -1))
    (call $read (i32.const 1024) (local.get $args_len))
    (if (i32.gt_u (local.get $args_len) (i32.const 0))
      (then
        (if (i32.lt_u (i32.sub (i32.load8_u (i32.const 1024)) (i32.const 48)) (i32.const 10))
          (then (local.set $stop_after (i32.sub (i32.load8_u (i32.const 1024)) (i32.const 48)))))))
    (block $end
      (loop $frame
        (br_if $end (i32.eq (local.get $frames) (local.get $stop_after)))
        (call $read (i32.const 16) (i32.const 4))
        (local.set $len (i32.load (i32.const 16)))
        (br_if $end (i32.eqz (local.get $len)))
        (call $read (i32.const 65536) (local.get $len))
        (local.set $sum (f64.const 0))
        (local.set $i (i32.const 0))
        (block $summed
          (loop $byte
            (br_if $summed (i32.ge_u (local.get $i) (local.get $len)))
            (local.set $sum (f64.add (local.get $sum)
                                     (f64.convert_i32_u (i32.load8_u (i32.add (i32.const 65536) (local.get $i))))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $byte)))
        (if (call $emit (i32.const 256) (i32.const 3) (f64.convert_i32_u (local.get $len))) (then (return (i32.const 0))))
        (if (call $emit (i32.const 260) (i32.const 3) (local.get $sum)) (then (return (i32.const 0))))
        (local.set $frames (i32.add (local.get $frames) (i32.const 1)))
        (br $frame)))
    (drop (call $emit (i32.const 264) (i32.const 6) (f64.convert_i32_u (local.get $frames))))
    (i32.const 0))

  (func (export "reduce") (param $partials_len i32) (param $args_len i32) (result i32)
    (call $json_integer (i64.const 0))
    (i32.const 0))
)
