/** The control database: catalog, topology and invocation records, behind plain SQL. */
package dev.thresher.store.control;
