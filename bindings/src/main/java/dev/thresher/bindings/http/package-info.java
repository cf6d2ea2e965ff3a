/** The HTTP routes an HTTP handler binding declares, their conflicts, and how a request's method and path match one. */
package dev.thresher.bindings.http;
