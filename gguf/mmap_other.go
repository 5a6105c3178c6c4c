//go:build !unix

package gguf

func mapFile(path string) ([]byte, func() error, error) { return readWhole(path) }
