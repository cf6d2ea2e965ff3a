/**
 * Leader replicas: each partition a node leads or stands by for, held in memory and kept current by
 * PostgreSQL logical replication ({@code pgoutput}), read as fresh as a query issued at call start
 * (docs/architecture.md, "Leader replicas").
 */
package dev.thresher.store.replica;
