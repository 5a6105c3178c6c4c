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
