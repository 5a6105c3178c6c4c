//go:build !race

package kernels

// attnQuick: see attn_race_test.go.
const attnQuick = false
