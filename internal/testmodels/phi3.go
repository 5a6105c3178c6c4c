package testmodels

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// phi3LongRopeMini: Phi3ForCausalLM with LongRoPE (Phi-3/3.5-mini-128k) as
// Phi3MiniModel writes it: context_length and
// rope.scaling.original_context_length, no scaling type,
// rope.scaling.attn_factor √(1 + ln(context/original)/ln original),
// rope_factors_long.weight and rope_factors_short.weight (rotary dims/2
// each), fused attn_qkv and ffn_up (gate then up), the sliding window
// llama.cpp ignores. The original context is 256 (4096 in the real
// models) so that llama.cpp picks the short factors with -c 256 and the
// long ones with -c 512 (n_ctx is padded to 256: above 256 is long);
// the long factors grow to 40 so the two differ within a few positions.
func phi3LongRopeMini(assets string) (*mmodel, error) {
	const (
		d, layers, heads, hd, ff, ctx, orig = 128, 4, 4, 32, 256, 1024, 256
	)
	tok, err := lfm2Vocab(assets) // a stand-in: llama.cpp's phi3 runs any vocabulary
	if err != nil {
		return nil, err
	}
	nv := len(tok.tokens)
	m := &mmodel{}
	a := "phi3."
	general(m, "phi3", "Phi-3-longrope-mini")
	m.set(a+"context_length", uint32(ctx))
	m.set(a+"rope.scaling.original_context_length", uint32(orig))
	m.set(a+"embedding_length", uint32(d))
	m.set(a+"feed_forward_length", uint32(ff))
	m.set(a+"block_count", uint32(layers))
	m.set(a+"attention.head_count", uint32(heads))
	m.set(a+"attention.head_count_kv", uint32(heads))
	m.set(a+"attention.layer_norm_rms_epsilon", float32(1e-5))
	m.set(a+"rope.dimension_count", uint32(hd))
	m.set(a+"rope.freq_base", float32(10000))
	m.set(a+"attention.sliding_window", uint32(2047))
	m.set(a+"rope.scaling.attn_factor", float32(math.Sqrt(1+math.Log(float64(ctx)/orig)/math.Log(orig))))
	tok.kvs(m)

	// factors as Phi-3.5-mini's are shaped: long ones rising from 1 to
	// tens over the pairs, short ones near 1
	factors := func(top float64) func(r *rand.Rand, n int) []float32 {
		return func(r *rand.Rand, n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(math.Pow(top, float64(i)/float64(n-1)))
			}
			return v
		}
	}
	m.add("token_embd.weight", normal(0.02), false, d, nv)
	for i := 0; i < layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		m.add(b+"attn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"attn_qkv.weight", normal(0.05), false, d, 3*heads*hd)
		m.add(b+"attn_output.weight", normal(0.02), false, heads*hd, d)
		m.add(b+"ffn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"ffn_up.weight", normal(0.02), false, d, 2*ff)
		m.add(b+"ffn_down.weight", normal(0.02), false, ff, d)
	}
	m.add("output_norm.weight", normw(10, 0.05), true, d)
	m.add("output.weight", normal(0.02), false, d, nv)
	m.add("rope_factors_long.weight", factors(40), true, hd/2)
	m.add("rope_factors_short.weight", factors(1.5), true, hd/2)
	return m, nil
}
