/**
 * The coordinating side of a call: plans it over the topology, sends one host request per leader host,
 * retries what provably ran no guest code, validates the published slots, reduces and publishes.
 * {@link dev.thresher.coordinator.Coordinator} reaches the control database, the node's cache, the
 * leader hosts and its reduce cell through the ports {@link dev.thresher.coordinator.CallStore},
 * {@link dev.thresher.coordinator.Catalog}, {@link dev.thresher.coordinator.Leaders} and
 * {@link dev.thresher.coordinator.Reducer}.
 */
package dev.thresher.coordinator;
