package nn

import (
	"math"
	"sync"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/libm"
	"github.com/loom-inference/loom/internal/quant"
)

// Operations of the families beyond Llama: LayerNorm with bias (GPT-2),
// GELU as ggml computes it (GPT-2's MLP, Gemma's GeGLU), soft-capping
// (Gemma 2).

// LayerNorm: out = (x − mean) / sqrt(var + eps) · w + b per row of len(w),
// as ggml_norm then ggml_mul and ggml_add: the sums in float64 in element
// order, the variance of the centred float32 values.
//
//	x, out [n, dim]; w, b [dim]
func LayerNorm(out, x, w, b []float32, eps float32) {
	dim := len(w)
	for r := 0; r+dim <= len(x); r += dim {
		row, o := x[r:r+dim], out[r:r+dim]
		var sum float64
		for _, v := range row {
			sum += float64(v)
		}
		mean := float32(sum / float64(dim))
		var sum2 float64
		for i, v := range row {
			d := v - mean
			o[i] = d
			sum2 += float64(d * d)
		}
		variance := float32(sum2 / float64(dim))
		scale := 1 / float32(math.Sqrt(float64(variance+eps)))
		for i := range o { // three roundings, as three ggml ops
			y := float32(o[i] * scale)
			y = float32(y * w[i])
			o[i] = y + b[i]
		}
	}
}

var (
	geluOnce  sync.Once
	geluTable []float32 // f16 input bits → the F16-rounded gelu, as float32
)

// geluF32 is ggml_gelu_f32: the tanh approximation in float32.
func geluF32(x float32) float32 {
	const coefA, sqrt2OverPi = float32(0.044715), float32(0.79788456080286535587989211986876)
	return 0.5 * x * (1 + libm.Tanhf(sqrt2OverPi*x*(1+coefA*x*x)))
}

// GELU applies ggml_gelu in place: ggml (built with GGML_GELU_FP16, its
// default) rounds the input to F16 and looks the result up in a table of
// F16 values; beyond ±10 it is 0 or x. The inputs are converted 64 at a
// time with the SIMD F16 conversion.
func GELU(x []float32) {
	geluOnce.Do(func() {
		geluTable = make([]float32, 1<<16)
		for i := range geluTable {
			geluTable[i] = quant.F16ToF32(quant.F32ToF16(geluF32(quant.F16ToF32(uint16(i)))))
		}
	})
	var h [64]uint16
	for len(x) > 0 {
		c := x[:min(64, len(x))]
		kernels.F32ToF16s(h[:len(c)], c)
		for i, v := range c {
			switch {
			case v <= -10:
				c[i] = 0
			case v >= 10:
			default:
				c[i] = geluTable[h[i]]
			}
		}
		x = x[len(c):]
	}
}

// GeGLU: gate = gelu(gate)·up (ggml_gelu, then ggml_mul).
func GeGLU(gate, up []float32) {
	GELU(gate)
	for i := range gate {
		gate[i] *= up[i]
	}
}

// SwiGLU-OAI constants: gpt-oss's clamped SwiGLU as llama.cpp fixes them
// (LLM_FFN_SWIGLU_OAI_MOE).
const (
	OAIAlpha = 1.702
	OAILimit = 7.0
)

// SwiGLUOAI is ggml_swiglu_oai: with x = min(gate, limit) and
// y = clamp(up, −limit, limit), gate = x/(1 + e^(−alpha·x)) · (y + 1)
// (glibc's expf, scalar, as ggml computes it).
func SwiGLUOAI(gate, up []float32) {
	const alpha, limit = float32(OAIAlpha), float32(OAILimit)
	for i, g := range gate {
		x := min(g, limit)
		y := min(max(up[i], -limit), limit)
		glu := x / (1 + libm.Expf(float32(alpha*(-x))))
		gate[i] = glu * (y + 1)
	}
}

// Softcap: x → cap·tanh(x/cap), as ggml_scale(1/cap), ggml_tanh (glibc's
// tanhf), ggml_scale(cap).
func Softcap(x []float32, cap float32) {
	inv := 1 / cap
	for i, v := range x {
		x[i] = softcap(v, inv, cap)
	}
}

// softcap is one value of Softcap; inv = 1/cap.
func softcap(x, inv, cap float32) float32 { return libm.Tanhf(float32(x*inv)) * cap }

// FFNTask runs a feed-forward activation over rows of a pool job.
type FFNTask struct {
	Gate, Up []float32 // [n, hidden]; Gate unused by GELU
	Hidden   int
	Kind     uint8 // 0 SwiGLU, 1 GELU (on Up), 2 GeGLU, 3 SwiGLU-OAI
}

// Do implements parallel.Task over rows [lo, hi).
func (t *FFNTask) Do(_, lo, hi int) {
	// Row by row, as ggml's unary ops: the vector kernels' tails (and so
	// the last bits) then fall where they do for one token, whichever
	// tokens a worker gets.
	for i := lo; i < hi; i++ {
		a, b := i*t.Hidden, (i+1)*t.Hidden
		switch t.Kind {
		case 0:
			SwiGLU(t.Gate[a:b], t.Up[a:b])
		case 1:
			GELU(t.Up[a:b])
		case 2:
			GeGLU(t.Gate[a:b], t.Up[a:b])
		case 3:
			SwiGLUOAI(t.Gate[a:b], t.Up[a:b])
		}
	}
}
