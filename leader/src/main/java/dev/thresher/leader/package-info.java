/** The leader side of a call: partition leadership leases and the host runs a leader serves for coordinators. */
package dev.thresher.leader;
