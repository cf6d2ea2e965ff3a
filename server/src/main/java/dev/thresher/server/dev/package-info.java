/** The local dev cluster: embedded PostgreSQL, its nodes in this process or as child processes, and its recovery. */
package dev.thresher.server.dev;
