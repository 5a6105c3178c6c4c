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
	// YaRN (ggml's rope_yarn), when ExtFactor is set: pair i's angle is
	// θ·FreqScale·(1−r) + θ·r, r = ExtFactor·ramp(i) falling from 1 to 0
	// over the pairs CorrDims[0]..CorrDims[1]; cos and sin are multiplied
	// by MScale (with YaRN, llama.cpp's attn_factor·(1 + 0.1·ln(1/FreqScale))).
	ExtFactor float32
	MScale    float32 // 0: 1
	CorrDims  [2]float32
}

// Yarn sets r up for YaRN as ggml_rope_ext does for extFactor, attnFactor,
// betaFast, betaSlow and the original context origCtx:
// ggml_rope_yarn_corr_dims and rope_yarn's magnitude scale, in float32.
func (r *RoPE) Yarn(extFactor, attnFactor, betaFast, betaSlow float32, origCtx int) {
	corr := func(beta float32) float32 { // ggml_rope_yarn_corr_dim
		num := float32(r.Dims) * logf(float32(origCtx)/float32(float32(beta*2)*float32(math.Pi)))
		return num / float32(2*logf(r.Base))
	}
	start := float32(math.Floor(float64(corr(betaFast))))
	end := float32(math.Ceil(float64(corr(betaSlow))))
	r.CorrDims = [2]float32{max(0, start), min(float32(r.Dims-1), end)}
	r.ExtFactor, r.MScale = extFactor, attnFactor
	if extFactor != 0 {
		r.MScale = attnFactor * float32(1+float32(float32(0.1)*logf(1/r.FreqScale)))
	}
}

// logf is C's logf for the positive normal arguments here.
func logf(x float32) float32 { return float32(math.Log(float64(x))) }

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
		if r.ExtFactor != 0 { // rope_yarn
			interp := float32(r.FreqScale * t)
			y := (float32(i) - r.CorrDims[0]) / max(0.001, r.CorrDims[1]-r.CorrDims[0])
			mix := (1 - min(1, max(0, y))) * r.ExtFactor
			t = float32(interp*(1-mix)) + float32(t*mix)
		} else {
			t *= r.FreqScale
		}
		c, s := libm.Cosf(t), libm.Sinf(t)
		if r.MScale != 0 && r.MScale != 1 {
			c, s = c*r.MScale, s*r.MScale
		}
		if r.NeoX {
			cs[i], cs[half+i] = c, s
		} else {
			cs[2*i], cs[2*i+1] = c, s
		}
		theta *= thetaScale
	}
}
