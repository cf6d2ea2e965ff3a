/** A node's assembly from its parts: configuration, pools and their budget, access, metrics, the front doors' services. */
package dev.thresher.server.node;
