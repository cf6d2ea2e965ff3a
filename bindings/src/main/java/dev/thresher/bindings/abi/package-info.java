/** Guest ABI v1 wire encodings: the row batch a component's {@code run} reads and the partials its {@code reduce} reads. */
package dev.thresher.bindings.abi;
