/** Runs components (core WebAssembly modules speaking guest ABI v1) in cells on a shared GraalWasm engine. */
package dev.thresher.cellhost;
