/** Connection pools and migrations shared by the control and shard stores. */
package dev.thresher.store;
