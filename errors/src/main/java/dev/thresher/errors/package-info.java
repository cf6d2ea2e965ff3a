/** The one error-code table of Thresher: stable numeric codes, their category and retry class. */
package dev.thresher.errors;
