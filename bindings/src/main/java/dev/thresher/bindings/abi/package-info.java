/**
 * Guest ABI v1 wire encodings: the row batch a component's {@code run} reads and the partials its {@code reduce} reads;
 * and the HTTP request an HTTP handler's {@code handle} reads.
 */
package dev.thresher.bindings.abi;
