/** Sample components (hand-written WebAssembly text speaking guest ABI v2) and their compiled bytes. */
package dev.thresher.examples;
