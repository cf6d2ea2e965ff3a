/** The node binary: the command line, a node's assembly from its parts, and the local dev cluster. */
package dev.thresher.server;
