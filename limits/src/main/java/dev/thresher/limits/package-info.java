/** Every bound of the call contract, with its default, its configuration key and its validation. */
package dev.thresher.limits;
