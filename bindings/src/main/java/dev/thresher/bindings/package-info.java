/** Binding records, the call API that front doors speak, and the numeric partials that cross the reduce boundary. */
package dev.thresher.bindings;
