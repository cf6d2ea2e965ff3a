/** A PostgreSQL wire protocol (v3) front door that serves {@code CALL BINDING name(json)} to psql, pgjdbc and node-postgres. */
package dev.thresher.pgwire;
