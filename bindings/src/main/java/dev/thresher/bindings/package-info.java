/**
 * Binding records, the call API and the HTTP handler service that front doors speak, and the numeric partials that cross
 * the reduce boundary.
 */
package dev.thresher.bindings;
