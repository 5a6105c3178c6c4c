package nn

import (
	"math"
	"testing"
)

// TestYarn: gpt-oss's YaRN (64 rotated dims, base 150000, factor 32,
// original context 4096, betas 32 and 1): the correction dims are
// floor(8.09) = 8 and ceil(17.4) = 18; pairs below 8 keep their original
// angle (extrapolation), pairs from 18 on are interpolated (÷ 32), the
// ones between mix linearly; cos and sin carry the magnitude scale
// 1 + 0.1·ln 32.
func TestYarn(t *testing.T) {
	r := RoPE{Dims: 64, Base: 150000, FreqScale: 1.0 / 32, NeoX: true}
	r.Yarn(1, 1, 32, 1, 4096)
	if r.CorrDims != [2]float32{8, 18} {
		t.Fatalf("correction dims %v, want [8 18]", r.CorrDims)
	}
	ms := 1 + 0.1*math.Log(32)
	if math.Abs(float64(r.MScale)-ms) > 1e-6 {
		t.Fatalf("magnitude scale %v, want %v", r.MScale, ms)
	}
	const pos = 1000
	cs := make([]float32, 64)
	r.Angles(cs, pos)
	for i := range 32 {
		theta := pos * math.Pow(150000, -2*float64(i)/64)
		mix := 1 - min(1, max(0, (float64(i)-8)/10))
		want := theta/32*(1-mix) + theta*mix
		c, s := float64(cs[i]), float64(cs[32+i])
		if math.Abs(c-ms*math.Cos(want)) > 2e-3 || math.Abs(s-ms*math.Sin(want)) > 2e-3 {
			t.Errorf("pair %d: cos, sin %v %v, want angle %v: %v %v", i, c, s, want, ms*math.Cos(want), ms*math.Sin(want))
		}
	}
	// Without YaRN nothing changes: plain scaled angles, unit magnitude.
	p := RoPE{Dims: 64, Base: 150000, FreqScale: 1.0 / 32, NeoX: true}
	p.Angles(cs, pos)
	for i := range 32 {
		theta := pos * math.Pow(150000, -2*float64(i)/64) / 32
		if math.Abs(float64(cs[i])-math.Cos(theta)) > 2e-3 {
			t.Errorf("plain pair %d: cos %v, want %v", i, cs[i], math.Cos(theta))
		}
	}
}

// TestLongRopeAngles: Phi-3 128k's LongRoPE as ggml_rope_cache_init
// computes it with freq_factors and ext_factor 0: pair i's angle is
// pos·θ_i / factor_i · freq_scale, θ_i the float32 running product of
// base^(−2/dims), and cos and sin are multiplied by attn_factor
// (rope.scaling.attn_factor, √(1 + ln 32 / ln 4096) for 128k from 4k) —
// with the long factors and with the short ones, in both pairings.
func TestLongRopeAngles(t *testing.T) {
	const dims, base = 16, 10000
	long := []float32{1, 1.25, 1.5, 2.5, 5, 9.5, 17, 31}
	short := []float32{1, 1, 1.01, 1.02, 1.05, 1.1, 1.3, 1.6}
	attn := float32(math.Sqrt(1 + math.Log(32)/math.Log(4096)))
	for _, c := range []struct {
		name    string
		factors []float32
		neox    bool
		scale   float32
	}{
		{"long NeoX", long, true, 1}, {"short NeoX", short, true, 1},
		{"long Norm", long, false, 1}, {"short, linear ×2", short, true, 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := RoPE{Dims: dims, Base: base, FreqScale: c.scale, Factors: c.factors, NeoX: c.neox}
			r.Yarn(0, attn, 32, 1, 4096) // what decoder.Bind does with attn_factor ≠ 1 and no YaRN
			if r.ExtFactor != 0 || r.MScale != attn {
				t.Fatalf("ext factor %v, magnitude %v; want 0, %v", r.ExtFactor, r.MScale, attn)
			}
			for _, pos := range []int{0, 1, 77, 5000, 100000} {
				cs := make([]float32, dims)
				r.Angles(cs, pos)
				thetaScale := float32(math.Pow(base, -2.0/dims))
				theta := float32(pos)
				for i := range dims / 2 {
					a := c.scale * (theta / c.factors[i])
					wc, ws := float64(attn)*math.Cos(float64(a)), float64(attn)*math.Sin(float64(a))
					gc, gs := cs[2*i], cs[2*i+1]
					if c.neox {
						gc, gs = cs[i], cs[dims/2+i]
					}
					if math.Abs(float64(gc)-wc) > 1e-6 || math.Abs(float64(gs)-ws) > 1e-6 {
						t.Errorf("pos %d pair %d: cos, sin %v %v, want %v %v (angle %v)", pos, i, gc, gs, wc, ws, a)
					}
					theta *= thetaScale
				}
			}
		})
	}
}
