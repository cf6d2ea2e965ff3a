/** The HTTP front door: health probes and direct calls of bindings as JSON. */
package dev.thresher.http;
