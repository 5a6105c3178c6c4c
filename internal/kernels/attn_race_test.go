//go:build race

package kernels

// attnQuick trims the attention tests' largest cases under the race
// detector, which slows the generic references tenfold.
const attnQuick = true
