//go:build !linux

package kvcache

// hugePages is a no-op where transparent huge pages are not Linux's.
func hugePages([]uint16) {}
