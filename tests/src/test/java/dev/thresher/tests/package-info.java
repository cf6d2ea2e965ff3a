/** Whole-system tests on the real cluster, and the rules that keep module boundaries. */
package dev.thresher.tests;
