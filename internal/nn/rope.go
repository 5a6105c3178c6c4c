package nn

import "math"

// RoPE rotates pairs of each head's first Dims dimensions by angle
// pos·θ_i, θ_i = base^(-2i/Dims) / factor_i · FreqScale (ggml_rope_ext with
// ext_factor 0). Two pairings are in use:
//   - Norm (GGUF/Llama order): pairs (2i, 2i+1);
//   - NeoX (rotate-half, Qwen and HF order): pairs (i, i + Dims/2).
type RoPE struct {
	Dims      int       // rotated dimensions per head (≤ head_dim)
	Base      float32   // rope.freq_base
	FreqScale float32   // 1/linear scaling factor (1 when unscaled)
	Factors   []float32 // rope_freqs.weight [Dims/2], nil when absent (Llama 3)
	NeoX      bool
}

// Apply rotates x ([nHeads, headDim] for one token) by the angles cs that
// Angles computed for the token's position.
func (r *RoPE) Apply(x []float32, headDim int, cs []float32) {
	half := r.Dims / 2
	for h := 0; h+headDim <= len(x); h += headDim {
		v := x[h : h+headDim]
		for i := 0; i < half; i++ {
			c, s := cs[2*i], cs[2*i+1]
			a, b := 2*i, 2*i+1
			if r.NeoX {
				a, b = i, i+half
			}
			x0, x1 := v[a], v[b]
			v[a] = x0*c - x1*s
			v[b] = x0*s + x1*c
		}
	}
}

// Angles writes cos and sin of each pair's angle at pos into cs [Dims].
// θ is built by repeated multiplication in float32, as ggml's rope cache is,
// so positions far into the context get ggml's exact angles. Computed once
// per token and shared by Q, K and every layer.
func (r *RoPE) Angles(cs []float32, pos int) {
	thetaScale := float32(math.Pow(float64(r.Base), -2.0/float64(r.Dims)))
	theta := float32(pos)
	for i := 0; i < r.Dims/2; i++ {
		t := theta
		if r.Factors != nil {
			t /= r.Factors[i]
		}
		t *= r.FreqScale
		cs[2*i] = float32(math.Cos(float64(t)))
		cs[2*i+1] = float32(math.Sin(float64(t)))
		theta *= thetaScale
	}
}
