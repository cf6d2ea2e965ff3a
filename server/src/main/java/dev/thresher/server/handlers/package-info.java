/** The runtime of HTTP handler bindings: resolves a route's handler and runs its component. */
package dev.thresher.server.handlers;
