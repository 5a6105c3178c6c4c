package nn

import (
	"math"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/libm"
)

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
// Angles computed for the token's position (kernels.RopeNorm/RopeNeoX: ggml's
// arithmetic, fused multiply-adds included).
func (r *RoPE) Apply(x []float32, headDim int, cs []float32) {
	half := r.Dims / 2
	for h := 0; h+headDim <= len(x); h += headDim {
		v := x[h : h+r.Dims]
		if r.NeoX {
			kernels.RopeNeoX(v, cs[:half], cs[half:r.Dims])
		} else {
			kernels.RopeNorm(v, cs[:r.Dims])
		}
	}
}

// Angles writes cos and sin of each pair's angle at pos into cs [Dims]:
// interleaved (cos₀, sin₀, cos₁, …) for the Norm pairing, halves (cos…,
// sin…) for NeoX, the layouts the rotation kernels read.
// θ is built by repeated multiplication in float32, as ggml's rope cache is,
// so positions far into the context get ggml's exact angles, and cos and sin
// are glibc's cosf and sinf (libm), which differ from the correctly rounded
// values in the last bit for about 1.6% of angles. Computed once per token
// and shared by Q, K and every layer.
func (r *RoPE) Angles(cs []float32, pos int) {
	thetaScale := float32(math.Pow(float64(r.Base), -2.0/float64(r.Dims)))
	theta := float32(pos)
	half := r.Dims / 2
	for i := 0; i < half; i++ {
		t := theta
		if r.Factors != nil {
			t /= r.Factors[i]
		}
		t *= r.FreqScale
		c, s := libm.Cosf(t), libm.Sinf(t)
		if r.NeoX {
			cs[i], cs[half+i] = c, s
		} else {
			cs[2*i], cs[2*i+1] = c, s
		}
		theta *= thetaScale
	}
}
