/** Slots, partitions, hosts and leadership: the vocabulary of where data lives, and the pure lookups over it. */
package dev.thresher.topology;
