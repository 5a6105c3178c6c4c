package llama2c

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/model"
	_ "github.com/loom-inference/loom/internal/model/families"
	"github.com/loom-inference/loom/internal/testmodels"
)

// checkpoint writes a llama2.c checkpoint with header h (dim, hidden_dim,
// n_layers, n_heads, n_kv_heads, vocab_size, seq_len) followed by floats
// float32 weights.
func checkpoint(t *testing.T, h [7]int32, floats int) string {
	t.Helper()
	b := make([]byte, 28+4*floats)
	for i, v := range h {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	for i := range floats {
		binary.LittleEndian.PutUint32(b[28+4*i:], math.Float32bits(float32(math.Sin(float64(i)))*0.5))
	}
	path := filepath.Join(t.TempDir(), "model.bin")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// floatsOf is the weights a header implies (shared classifier).
func floatsOf(h [7]int32) int {
	dim, hidden, layers, heads, kv, vocab, seq := int(h[0]), int(h[1]), int(h[2]), int(h[3]), int(h[4]), int(h[5]), int(h[6])
	hs := dim / heads
	return vocab*dim + layers*(2*dim+2*dim*dim+2*kv*hs*dim+3*hidden*dim) + dim + seq*hs
}

// TestHostileHeader: header fields that no checkpoint could have, or that
// the file is too short to hold, are refused naming the field, before
// anything sized by them is allocated.
func TestHostileHeader(t *testing.T) {
	good := [7]int32{8, 16, 2, 2, 1, 16, 32}
	with := func(i int, v int32) [7]int32 { h := good; h[i] = v; return h }
	cases := []struct {
		name   string
		header [7]int32
		floats int
		want   string
	}{
		{"a billion layers", with(2, 1e9), floatsOf(good), "header n_layers = 1000000000 (want 1 to 4096)"},
		{"a thousand layers, weights for two", with(2, 1000), floatsOf(good), "n_layers 1000, n_heads 2, n_kv_heads 1, vocab_size 16, seq_len 32) needs 2369056 bytes of weights, the file has 5792"},
		{"zero dim", with(0, 0), floatsOf(good), "header dim = 0"},
		{"negative hidden", with(1, -16), floatsOf(good), "header hidden_dim = -16"},
		{"huge hidden", with(1, 1<<30), floatsOf(good), "header hidden_dim = 1073741824"},
		{"zero heads", with(3, 0), floatsOf(good), "header n_heads = 0"},
		{"heads not dividing dim", with(3, 3), floatsOf(good), "header dim = 8 is not divisible by n_heads = 3"},
		{"KV heads not grouping", with(4, 3), floatsOf(good), "cannot be grouped"},
		{"odd head width", [7]int32{6, 16, 2, 2, 1, 16, 32}, floatsOf(good), "rope.dimension_count = 3"},
		{"huge vocabulary", with(5, 1<<30), floatsOf(good), "header vocab_size = 1073741824"},
		{"most negative vocabulary", with(5, math.MinInt32), floatsOf(good), "header vocab_size = 2147483648"},
		{"huge sequence", with(6, 1<<30), floatsOf(good), "needs"},
		{"truncated", good, floatsOf(good) - 1, "needs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := checkpoint(t, c.header, c.floats)
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			cfg, src, err := Load(path)
			if err == nil {
				var a model.Arch
				if a, err = model.Lookup(cfg.Arch); err == nil {
					_, err = a.Build(cfg, src)
				}
			}
			runtime.ReadMemStats(&m1)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant one containing %q", err, c.want)
			}
			if n := m1.TotalAlloc - m0.TotalAlloc; n > 64<<20 {
				t.Errorf("the refused load allocated %d MiB", n>>20)
			}
		})
	}
	cfg, src, err := Load(checkpoint(t, good, floatsOf(good)))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := model.Lookup(cfg.Arch)
	if _, err := a.Build(cfg, src); err != nil {
		t.Fatalf("the checkpoint they are made from: %v", err)
	}
}

// TestStories260K: the real checkpoint still loads.
func TestStories260K(t *testing.T) {
	cfg, src, err := Load(filepath.Join(testmodels.Shared(t), "models", "stories260K", "stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := model.Lookup(cfg.Arch)
	if _, err := a.Build(cfg, src); err != nil {
		t.Fatal(err)
	}
}
