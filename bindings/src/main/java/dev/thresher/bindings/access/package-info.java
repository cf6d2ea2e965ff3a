/**
 * Users, tenants and grants: who a connection or a request is ({@link dev.thresher.bindings.access.Principal}), how a
 * password is kept and checked (SCRAM-SHA-256, {@link dev.thresher.bindings.access.Scram}), and the statements that
 * change them ({@link dev.thresher.bindings.access.AccessStatement}).
 */
package dev.thresher.bindings.access;
