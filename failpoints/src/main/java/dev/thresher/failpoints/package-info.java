/** Named fault-injection points of a node: tests arm them to delay, fail, drop or halt; production never enables them. */
package dev.thresher.failpoints;
