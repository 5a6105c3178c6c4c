package mmap

import "testing"

func TestWithin(t *testing.T) {
	m := make([]byte, 100)
	other := make([]byte, 10)
	for _, c := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"whole", m, true},
		{"inside", m[10:20], true},
		{"tail", m[90:], true},
		{"empty", m[5:5], false},
		{"elsewhere", other, false},
		{"past the end", m[95:100:100][:5], true},
		{"grown past the end", m[95:100:100][:5:5], true},
	} {
		if got := Within(c.b, m); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if Within(m[:10], nil) {
		t.Error("nil mapping holds bytes")
	}
	big := make([]byte, 200)
	if Within(big[50:150], big[:100]) {
		t.Error("a slice running past the mapping's end is held")
	}
	if Within(big[:100], big[50:150]) {
		t.Error("a slice starting before the mapping is held")
	}
}
