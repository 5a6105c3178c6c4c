package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// simdDPBF16, when set (amd64 with AVX512_BF16), runs one VDPBF16PS on
// sixteen lanes.
var simdDPBF16 func(acc *[16]float32, a, b *[16]uint32)

// TestDPBF16: the emulation of one VDPBF16PS lane on cases measured on the
// instruction (AMD Zen 5): the high product is added first, each step
// rounds, subnormal inputs read as zero and subnormal results (the
// intermediate one too) flush to zero, signs kept.
func TestDPBF16(t *testing.T) {
	h := func(f float64) uint32 { return uint32(quant.F32ToBF16(float32(f))) }
	pair := func(hi, lo uint32) uint32 { return hi<<16 | lo }
	one := h(1)
	p2 := func(e int) float64 { return math.Ldexp(1, e) }
	for _, c := range []struct {
		name    string
		acc     float32
		a, b    uint32
		want    uint32 // float32 bits
		wantAny bool   // signed zero either way
	}{
		// 1 + 2⁻⁹ (high) rounds to 1 + 2⁻⁹ exactly; + 2⁻²⁴·(1+2⁻⁷)… pick a
		// case where the order matters: 1 + 2⁻²⁴ ties to 1, twice.
		{name: "two ties", acc: 1, a: pair(h(p2(-24)), h(p2(-24))), b: pair(one, one), want: math.Float32bits(1)},
		// High first: 2²⁴ + 1 (high) ties to 2²⁴, then −2²⁴ → 0; low first
		// would give 2²⁴ − 2²⁴ + 1 = 1.
		{name: "high first", acc: 0x1p24, a: pair(one, h(-p2(24))), b: pair(one, one), want: 0},
		{name: "bf16 subnormal is zero", acc: 0, a: pair(0x0001, 0), b: pair(one, 0), want: 0},
		{name: "product below 2⁻¹²⁶ flushed", acc: 0, a: pair(h(p2(-70)), 0), b: pair(h(p2(-70)), 0), want: 0},
		{name: "accumulator subnormal is zero", acc: math.Float32frombits(1), a: 0, b: 0, want: 0},
		{name: "negative subnormal sum flushes to -0, then + 0·0", acc: float32(-p2(-126)), a: pair(h(p2(-64)), 0), b: pair(h(p2(-63)), 0), want: 0},
		{name: "negative subnormal sum flushes to -0", acc: 0, a: pair(0, h(p2(-70))), b: pair(0, h(-p2(-70))), want: 0x80000000},
		{name: "exact subnormal product, normal sum", acc: float32(p2(-126)), a: pair(h(p2(-64)), 0), b: pair(h(p2(-63)), 0), want: math.Float32bits(float32(1.5 * p2(-126)))},
		{name: "intermediate flushed", acc: float32(p2(-126)), a: pair(h(-p2(-64)), h(p2(-64))), b: pair(h(p2(-63)), h(p2(-63))), want: 0},
		{name: "-0 stays -0", acc: float32(math.Copysign(0, -1)), a: pair(0x8000, 0x8000), b: pair(one, one), want: 0x80000000},
		{name: "inf·0", acc: 0, a: pair(0x7f80, 0), b: pair(0, 0), want: 0x7fc00000, wantAny: true},
	} {
		got := dpbf16(c.acc, c.a, c.b)
		if c.wantAny {
			if !math.IsNaN(float64(got)) {
				t.Errorf("%s: %v, want NaN", c.name, got)
			}
			continue
		}
		if math.Float32bits(got) != c.want {
			t.Errorf("%s: %v (%#x), want %v (%#x)", c.name, got, math.Float32bits(got), math.Float32frombits(c.want), c.want)
		}
	}
	if simdDPBF16 != nil {
		// The same lanes through the instruction itself.
		rng := rand.New(rand.NewPCG(11, 12))
		for range 2000 {
			var acc [16]float32
			var a, b [16]uint32
			// BF16 halves of every exponent, subnormals and zeros more
			// often than chance would pick them.
			half := func() uint32 {
				v := rng.Uint32() & 0xffff
				if rng.IntN(8) == 0 {
					v &= 0x807f
				}
				return v
			}
			for l := range acc {
				acc[l] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(300)-150))
				a[l], b[l] = half()<<16|half(), half()<<16|half()
			}
			in, want := acc, acc
			for l := range want {
				want[l] = dpbf16(want[l], a[l], b[l])
			}
			simdDPBF16(&acc, &a, &b)
			for l := range acc {
				if got := acc[l]; math.Float32bits(got) != math.Float32bits(want[l]) && !(got != got && want[l] != want[l]) {
					t.Fatalf("lane %d: VDPBF16PS %v (%#x), dpbf16 %v (%#x) for acc %#x a %#x b %#x",
						l, got, math.Float32bits(got), want[l], math.Float32bits(want[l]), math.Float32bits(in[l]), a[l], b[l])
				}
			}
		}
	}
}

// TestBF16Pairs: the activation layout of the VDPBF16PS tiles holds each
// element rounded as ggml rounds it, at the place the tiles' weights are
// permuted to.
func TestBF16Pairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{16, 32, 48, 64, 80, 2048} {
		x := make([]float32, n)
		w := make([]byte, 2*n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			binary.LittleEndian.PutUint16(w[2*i:], quant.F32ToBF16(x[i]))
		}
		dst := make([]byte, bf16PairBytes(n))
		bf16Pairs(dst, x, 64)
		for c := range (n + 31) / 32 {
			for l := range 16 {
				if got, want := binary.LittleEndian.Uint32(dst[64*c+4*l:]), bf16WeightPair(w, n, c, l); got != want {
					t.Fatalf("n=%d chunk %d dword %d: %#x, weights' pair %#x", n, c, l, got, want)
				}
			}
		}
	}
}

// TestBF16Gemm: BF16 products of two or more tokens, for every row length
// (multiples of 16, so both whole and half chunks), every token count a
// tile mix can take and rows past the last tile of four (those take
// vec_dot, as llamafile_sgemm declines them): bit-identical to
// tinyBLAS's order computed with exact FMAs (floatGemmExact), and with
// subnormal weights and activations bit-identical to the portable
// emulation of the tiles (bf16PairsGemmGeneric).
func TestBF16Gemm(t *testing.T) {
	g := table[tensor.BF16].gemm
	rng := rand.New(rand.NewPCG(15, 16))
	p := parallel.New(2)
	defer p.Close()
	for k := 16; k <= 320; k += 16 {
		for _, rows := range []int{4, 9} {
			data := randomFloatRows(rng, tensor.BF16, rows, k)
			m, err := NewMatrix("w", tensor.BF16, rows, k, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{2, 3, 4, 5, 6, 7, 11, 13} {
				x := make([]float32, n*k)
				for i := range x {
					x[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(20)-10))
				}
				want := gemmWant(m, tensor.BF16, data, rows, k, x, n)
				got := make([]float32, n*rows)
				new(Workspace).MatMul(p, m, x, n, got)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s k=%d rows=%d n=%d: out[%d] = %v, tinyBLAS order %v", g.name, k, rows, n, i, got[i], want[i])
					}
				}
			}
		}
	}
	if g.tiles[1] == nil {
		t.Skip("no VDPBF16PS tiles on this CPU / build")
	}
	// Subnormals: the tiles against their emulation.
	for _, k := range []int{16, 48, 2048} {
		const rows, n = 8, 9
		data := randomFloatRows(rng, tensor.BF16, rows, k)
		for i := 0; i < len(data); i += 2 * 7 {
			binary.LittleEndian.PutUint16(data[i:], uint16(rng.Uint32())&0x807f) // subnormal or zero
		}
		m, _ := NewMatrix("w", tensor.BF16, rows, k, data)
		x := make([]float32, n*k)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(250)-125))
		}
		got := make([]float32, n*rows)
		new(Workspace).MatMul(p, m, x, n, got)
		act := make([]byte, n*bf16PairBytes(k))
		for j := range n {
			bf16Pairs(act[j*bf16PairBytes(k):], x[j*k:(j+1)*k], 64)
		}
		want := make([]float32, n*rows)
		bf16PairsGemmGeneric(m, act, bf16PairBytes(k), want, 0, rows, 0, n)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("k=%d subnormals: out[%d] = %v, emulation %v", k, i, got[i], want[i])
			}
		}
	}
}
