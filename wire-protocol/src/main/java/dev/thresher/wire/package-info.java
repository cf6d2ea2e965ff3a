/** The node-to-node binary protocol: framed, versioned messages for shard runs, their codec, server and client. */
package dev.thresher.wire;
