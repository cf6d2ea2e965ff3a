/**
 * The node binary, in rooms: {@code admin} (the table, binding, topology and user services over the control and shard
 * databases), {@code node} (a node's assembly from its parts), {@code handlers} (the runtime of HTTP handler
 * bindings), {@code dev} (the local dev cluster) and {@code cli} (the command line). {@code tests/ModuleBoundariesTest}
 * holds the rooms' dependencies to one direction.
 */
package dev.thresher.server;
