package main

import "testing"

func TestParseKVSize(t *testing.T) {
	for _, c := range []struct {
		in     string
		tokens int
		bytes  int64
		ok     bool
	}{
		{"", 0, 0, true},
		{"4096", 4096, 0, true},
		{"512MiB", 0, 512 << 20, true},
		{"1.5GB", 0, 1500000000, true},
		{"2KiB", 0, 2048, true},
		{"0", 0, 0, false},
		{"-3", 0, 0, false},
		{"12XB", 0, 0, false},
		{"-1MiB", 0, 0, false},
		{"9999GiB", 0, 0, false},
	} {
		tok, b, err := parseKVSize(c.in)
		if (err == nil) != c.ok || tok != c.tokens || b != c.bytes {
			t.Errorf("parseKVSize(%q) = %d, %d, %v; want %d, %d, ok %v", c.in, tok, b, err, c.tokens, c.bytes, c.ok)
		}
	}
}
