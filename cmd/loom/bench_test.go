package main

import "testing"

// TestWeightsLine: loom bench's weights line names what was repacked,
// what copied into huge pages, and what the file's mapping serves.
func TestWeightsLine(t *testing.T) {
	for _, c := range []struct {
		repacked, copied int64
		want             string
	}{
		{0, 0, "weights read from the file's mapping"},
		{629_800_000, 0, "weights 629.8 MB repacked at load; the rest read from the file's mapping"},
		{0, 2_068_800_000, "weights 2068.8 MB copied into huge pages (--mmap reads them from the file)"},
		{500_000_000, 70_000_000, "weights 500.0 MB repacked at load, 70.0 MB copied into huge pages (--mmap reads those from the file)"},
	} {
		if got := weightsLine(c.repacked, c.copied); got != c.want {
			t.Errorf("weightsLine(%d, %d) = %q, want %q", c.repacked, c.copied, got, c.want)
		}
	}
}
