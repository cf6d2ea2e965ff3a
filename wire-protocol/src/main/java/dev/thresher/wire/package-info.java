/** The node-to-node binary protocol: framed, versioned messages for host runs (a leader host running the slots of a call), their codec, server and client. */
package dev.thresher.wire;
