package phi3_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
	_ "github.com/loom-inference/loom/internal/model/phi3"
)

var (
	longF  = []float32{1, 1.5, 6, 24}
	shortF = []float32{1, 1.02, 1.1, 1.4}
	freqs  = []float32{1, 2, 4, 8}
	// Phi-3 128k's magnitude as the converter writes it, for 1024 from 256.
	phiAttn = float32(math.Sqrt(1 + math.Log(1024.0/256)/math.Log(256)))
)

// phi3File is a 2-layer Phi-3 (dim 16, 2 heads over 1 KV head of width 8,
// all 8 dims rotated, FFN 32, 16 tokens, F32) trained for 1024 positions
// from an original 256, with LongRoPE's magnitude and its factors as
// tensors (extra: more tensors or other factors; drop: tensors left out).
func phi3File(t *testing.T, extra map[string][]float32, drop ...string) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	for _, kv := range []struct {
		k string
		v any
	}{
		{"general.architecture", "phi3"}, {"phi3.embedding_length", uint32(16)}, {"phi3.block_count", uint32(2)},
		{"phi3.feed_forward_length", uint32(32)}, {"phi3.attention.head_count", uint32(2)}, {"phi3.attention.head_count_kv", uint32(1)},
		{"phi3.context_length", uint32(1024)}, {"phi3.rope.dimension_count", uint32(8)}, {"phi3.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"phi3.rope.scaling.original_context_length", uint32(256)}, {"phi3.rope.scaling.attn_factor", phiAttn},
		{"phi3.attention.sliding_window", uint32(64)},
	} {
		w.Set(kv.k, kv.v)
	}
	seed := 0
	add := func(name string, vals []float32, dims ...uint64) {
		if slices.Contains(drop, name) {
			return
		}
		n := 1
		for _, d := range dims {
			n *= int(d)
		}
		b := make([]byte, 4*n)
		for i := range n {
			seed++
			v := float32(math.Sin(float64(seed))) * 0.5
			if vals != nil {
				v = vals[i]
			}
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		if err := w.AddTensor(name, gguf.F32, dims, b); err != nil {
			t.Fatal(err)
		}
	}
	add("token_embd.weight", nil, 16, 16)
	for l := range 2 {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", nil, 16)
		add(p+"attn_qkv.weight", nil, 16, 32)
		add(p+"attn_output.weight", nil, 16, 16)
		add(p+"ffn_norm.weight", nil, 16)
		add(p+"ffn_up.weight", nil, 16, 64)
		add(p+"ffn_down.weight", nil, 32, 16)
	}
	add("output_norm.weight", nil, 16)
	add("output.weight", nil, 16, 16)
	for name, v := range map[string][]float32{"rope_factors_long.weight": longF, "rope_factors_short.weight": shortF} {
		if extra[name] == nil {
			add(name, v, 4)
		}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range extra {
			if !yield(k) {
				return
			}
		}
	}) {
		add(name, extra[name], uint64(len(extra[name])))
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	f.Path = "phi3.gguf"
	return f
}

// TestLongRope: a Phi-3 128k-style file binds rope_factors_long when the
// per-sequence context (rounded up to 256, as llama.cpp pads it) exceeds
// rope.scaling.original_context_length and rope_factors_short otherwise,
// as llama.cpp's get_rope_factors picks (rope_freqs.weight wins; a
// missing tensor leaves the angles undivided); cos and sin carry
// rope.scaling.attn_factor either way, and the angles are llama.cpp's:
// pos·θ_i / factor_i. llama.cpp ignores Phi-3's sliding window.
func TestLongRope(t *testing.T) {
	cases := []struct {
		name    string
		ctx     int
		extra   map[string][]float32
		drop    []string
		which   string
		factors []float32
		err     string
	}{
		{"the original context: short", 256, nil, nil, "short", shortF, ""},
		{"a shorter one, padded to 256: short", 100, nil, nil, "short", shortF, ""},
		{"one more, padded to 512: long", 257, nil, nil, "long", longF, ""},
		{"the training context: long", 1024, nil, nil, "long", longF, ""},
		{"the default context (1024): long", 0, nil, nil, "long", longF, ""},
		{"rope_freqs wins", 1024, map[string][]float32{"rope_freqs.weight": freqs}, nil, "", freqs, ""},
		{"long missing: undivided", 1024, nil, []string{"rope_factors_long.weight"}, "", nil, ""},
		{"short alone for a short context", 64, nil, []string{"rope_factors_long.weight"}, "short", shortF, ""},
		{"factors of the wrong length", 64, map[string][]float32{"rope_factors_long.weight": {1, 2}}, nil, "", nil, "rope_factors_long.weight"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := phi3File(t, c.extra, c.drop...)
			m, err := model.LoadGGUFWith(f, model.GGUFSource{F: f}, func(cfg *model.Config) error {
				cfg.RopeCtx = c.ctx
				return nil
			})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := m.(*decoder.PreNorm)
			cfg := m.Config()
			if cfg.LongRope != c.which || !slices.Equal(w.Rope.Factors, c.factors) {
				t.Errorf("factors %q %v, want %q %v", cfg.LongRope, w.Rope.Factors, c.which, c.factors)
			}
			if w.Rope.MScale != phiAttn || w.Rope.ExtFactor != 0 || w.Rope.FreqScale != 1 {
				t.Errorf("magnitude %v, ext %v, freq scale %v; want %v, 0, 1", w.Rope.MScale, w.Rope.ExtFactor, w.Rope.FreqScale, phiAttn)
			}
			if cfg.SlidingWindow != 0 {
				t.Errorf("sliding window %d, want 0 (llama.cpp disables Phi-3's)", cfg.SlidingWindow)
			}
			const pos = 300
			cs := make([]float32, 8)
			w.Rope.Angles(cs, pos)
			theta, step := float32(pos), float32(math.Pow(10000, -2.0/8))
			for i := range 4 {
				a := theta
				if c.factors != nil {
					a /= c.factors[i]
				}
				wc, ws := float64(phiAttn)*math.Cos(float64(a)), float64(phiAttn)*math.Sin(float64(a))
				if math.Abs(float64(cs[i])-wc) > 1e-6 || math.Abs(float64(cs[4+i])-ws) > 1e-6 { // NeoX halves
					t.Errorf("pair %d: cos, sin %v %v, want %v %v", i, cs[i], cs[4+i], wc, ws)
				}
				theta *= step
			}
		})
	}
}
