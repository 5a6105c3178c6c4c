package kernels

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/internal/libm"
)

// recOrders: the order each implementation of the recurrent kernels must
// reproduce bit for bit (the generic one is the plain math: within float
// noise of them). The AVX2 kernels keep the AVX-512 build's order.
var recOrders = map[string]f32Order{"avx512": orderAVX512, "avx2": orderAVX512}

// orderAVX2 is the order of llama.cpp's haswell build (32-element steps of
// 8 lanes, the AVX2 GGML_F32_VEC_REDUCE), which no kernel keeps: pinned
// here to that build's results (TestRecurrentGGML, TestRecurrentDotOrder)
// as the record of how far the two builds part.
var orderAVX2 = f32Order{32, 8}

func implNamed[F any](t *testing.T, o *vecOp[F], name string) F {
	t.Helper()
	for _, im := range o.impls {
		if im.name == name {
			return im.f
		}
	}
	t.Fatalf("%s: no implementation %q", o.name, name)
	panic("unreachable")
}

func randF32s(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return v
}

func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// near: |got − want| within tol relative to the magnitude m of the terms.
func near(got, want, m float32, tol float64) bool {
	return math.Abs(float64(got)-float64(want)) <= tol*math.Max(float64(m), 1e-30)
}

// absDot is Σ |x·y|, the scale of a dot product's rounding.
func absDot(x, y []float32) float32 {
	var s float64
	for i := range x {
		s += math.Abs(float64(x[i]) * float64(y[i]))
	}
	return float32(s)
}

// TestRecurrentVecOps: DotF32, MadF32 and ScaleF32 of every implementation
// on every length 0..200 (every leftover case of both builds), bit for bit
// against the implementation's order, the generic one within float noise.
func TestRecurrentVecOps(t *testing.T) {
	for _, im := range dotF32Op.impls {
		name := im.name
		t.Run(name, func(t *testing.T) {
			dot, mad, scal := implNamed(t, dotF32Op, name), implNamed(t, madF32Op, name), implNamed(t, scaleF32Op, name)
			o, exact := recOrders[name]
			if !exact {
				o = orderAVX512
			}
			rng := rand.New(rand.NewPCG(31, 32))
			for n := 0; n <= 200; n++ {
				// Three spare elements past n: nothing may be written
				// there.
				x, y := randF32s(rng, n+3, 1), randF32s(rng, n+3, 1)
				got, want := dot(x[:n], y[:n]), o.dot(x[:n], y[:n])
				if exact && math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("DotF32 n=%d: %v, order %v", n, got, want)
				}
				if !near(got, want, absDot(x[:n], y[:n]), 1e-5) {
					t.Fatalf("DotF32 n=%d: %v, order %v", n, got, want)
				}
				v := float32(rng.NormFloat64())
				a, b := append([]float32(nil), y...), append([]float32(nil), y...)
				mad(a[:n], x, v)
				madOrder(b[:n], x[:n], v)
				for i := range a {
					if exact || i >= n {
						if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
							t.Fatalf("MadF32 n=%d [%d]: %v, order %v", n, i, a[i], b[i])
						}
					} else if !near(a[i], b[i], float32(math.Abs(float64(x[i]*v))+math.Abs(float64(y[i]))), 1e-6) {
						t.Fatalf("MadF32 n=%d [%d]: %v, order %v", n, i, a[i], b[i])
					}
				}
				a, b = append([]float32(nil), y...), append([]float32(nil), y...)
				scal(a[:n], v)
				scaleF32Generic(b[:n], v)
				if i := firstDiff(a, b); i >= 0 {
					t.Fatalf("ScaleF32 n=%d [%d]: %v, reference %v", n, i, a[i], b[i])
				}
			}
		})
	}
}

// TestRecurrentDotOrder pins the orders on sums whose rounding shows
// where each term joins: tiny terms t (3/4 of half an ulp of 1) vanish
// when added to 1 one at a time but not when added to each other first;
// and a product p = (1+2⁻¹²)² next to −1 keeps its last bit (2⁻²⁴) only
// when fused.
func TestRecurrentDotOrder(t *testing.T) {
	const tiny = 0x1.8p-25
	const u = 1 + 0x1p-12
	for _, c := range []struct {
		o    f32Order
		n    int
		x    map[int]float32 // the rest 0; y all 1 but where x is u
		want float32
		why  string
	}{
		{orderAVX512, 64, map[int]float32{0: 1, 32: tiny, 48: tiny}, 1, "AVX-512: lanes 32 and 48 meet lanes 0 and 16 at the first fold"},
		{orderAVX512, 64, map[int]float32{0: 1, 8: tiny, 40: tiny}, 1 + 0x1p-23, "AVX-512: lanes 8 and 40 add up before the 8-apart step"},
		{orderAVX512, 64, map[int]float32{0: 1, 2: tiny, 3: tiny}, 1, "AVX-512: lane 2 joins lane 0 before lane 3 joins lane 1"},
		{orderAVX2, 32, map[int]float32{0: 1, 2: tiny, 3: tiny}, 1 + 0x1p-23, "AVX2: hadd adds lanes 2 and 3 before they meet lane 0"},
		{orderAVX2, 32, map[int]float32{0: 1, 8: tiny, 24: tiny}, 1 + 0x1p-23, "AVX2: registers 1 and 3 add up first"},
		{orderAVX512, 80, map[int]float32{0: -1, 64: u}, 0x1p-11, "AVX-512 leftovers, a chunk of 16: rounded products"},
		{orderAVX512, 72, map[int]float32{0: -1, 64: u}, 0x1p-11, "AVX-512 leftovers, a chunk of 8: rounded products"},
		{orderAVX512, 71, map[int]float32{0: -1, 64: u}, 0x1p-11 + 0x1p-24, "AVX-512 last 7 leftovers: fused"},
		{orderAVX2, 40, map[int]float32{0: -1, 32: u}, 0x1p-11, "AVX2 leftovers, a chunk of 8: rounded products"},
		{orderAVX2, 36, map[int]float32{0: -1, 32: u}, 0x1p-11, "AVX2 leftovers, a chunk of 4: rounded products"},
		{orderAVX2, 35, map[int]float32{0: -1, 32: u}, 0x1p-11 + 0x1p-24, "AVX2 last 3 leftovers: fused"},
	} {
		x, y := make([]float32, c.n), make([]float32, c.n)
		for i := range y {
			y[i] = 1
		}
		for e, v := range c.x {
			x[e] = v
			if v == u {
				y[e] = u
			}
		}
		if got := c.o.dot(x, y); got != c.want {
			t.Errorf("%s: %v, want %v", c.why, got, c.want)
		}
		for _, im := range dotF32Op.impls {
			if o, ok := recOrders[im.name]; ok && o == c.o {
				if got := im.f(x, y); got != c.want {
					t.Errorf("%s (%s kernel): %v, want %v", c.why, im.name, got, c.want)
				}
			}
		}
	}
}

// TestGatedDeltaRule: every implementation against its order (the
// row-by-row composition of the vector functions), for head sizes with
// and without whole vector steps; the generic within float noise. Two
// tokens in a row, so the second reads a state the kernel wrote.
func TestGatedDeltaRule(t *testing.T) {
	for _, im := range deltaOp.impls {
		name := im.name
		t.Run(name, func(t *testing.T) {
			f := implNamed(t, deltaOp, name)
			o, exact := recOrders[name]
			if !exact {
				o = orderAVX512
			}
			rng := rand.New(rand.NewPCG(41, 42))
			for _, s := range []int{1, 7, 16, 32, 48, 64, 96, 128, 192, 256} {
				st := randF32s(rng, s*s, 0.3)
				a, b := append([]float32(nil), st...), append([]float32(nil), st...)
				oa, ob := make([]float32, s), make([]float32, s)
				scale := 1 / float32(math.Sqrt(float64(s)))
				for tok := range 2 {
					q, k, v := randF32s(rng, s, float64(scale)), randF32s(rng, s, float64(scale)), randF32s(rng, s, 1)
					decay, beta := float32(0.9+0.05*rng.Float64()), float32(rng.Float64())
					f(a, q, k, v, oa, decay, beta, scale)
					o.gatedDeltaRule(b, q, k, v, ob, decay, beta, scale)
					if exact {
						if i := firstDiff(a, b); i >= 0 {
							t.Fatalf("S=%d token %d: state[%d] %v, order %v", s, tok, i, a[i], b[i])
						}
						if i := firstDiff(oa, ob); i >= 0 {
							t.Fatalf("S=%d token %d: out[%d] %v, order %v", s, tok, i, oa[i], ob[i])
						}
						continue
					}
					for i := range a {
						if !near(a[i], b[i], 1, 1e-5) {
							t.Fatalf("S=%d token %d: state[%d] %v, order %v", s, tok, i, a[i], b[i])
						}
					}
					for i := range oa {
						if !near(oa[i], ob[i], 1, 1e-5) {
							t.Fatalf("S=%d token %d: out[%d] %v, order %v", s, tok, i, oa[i], ob[i])
						}
					}
				}
			}
		})
	}
}

// TestSSMScan: every implementation against its order for state sizes
// 1..200 (vector part and leftovers), a few channels each; the generic
// within float noise.
func TestSSMScan(t *testing.T) {
	for _, im := range ssmScanOp.impls {
		name := im.name
		t.Run(name, func(t *testing.T) {
			f := implNamed(t, ssmScanOp, name)
			o, exact := recOrders[name]
			if !exact {
				o = orderAVX512
			}
			rng := rand.New(rand.NewPCG(51, 52))
			for n := 0; n <= 200; n++ {
				p := 1 + n%3
				st := randF32s(rng, p*n, 1)
				x, bb, cc := randF32s(rng, p, 1), randF32s(rng, n, 1), randF32s(rng, n, 1)
				dA, dt := float32(0.5+0.5*rng.Float64()), float32(0.1+rng.Float64())
				a, b := append([]float32(nil), st...), append([]float32(nil), st...)
				ya, yb := randF32s(rng, p+1, 1), make([]float32, p+1)
				yb[p] = ya[p]
				f(a, x, bb, cc, ya[:p], dA, dt)
				o.ssmScan(b, x, bb, cc, yb[:p], dA, dt)
				if exact {
					if i := firstDiff(a, b); i >= 0 {
						t.Fatalf("N=%d: state[%d] %v, order %v", n, i, a[i], b[i])
					}
					if i := firstDiff(ya, yb); i >= 0 {
						t.Fatalf("N=%d: y[%d] %v, order %v", n, i, ya[i], yb[i])
					}
					continue
				}
				for i := range a {
					if !near(a[i], b[i], float32(math.Abs(float64(st[i]))+2), 1e-6) {
						t.Fatalf("N=%d: state[%d] %v, order %v", n, i, a[i], b[i])
					}
				}
				for i := range p {
					if !near(ya[i], yb[i], absDot(b[i*n:(i+1)*n], cc), 1e-5) {
						t.Fatalf("N=%d: y[%d] %v, order %v", n, i, ya[i], yb[i])
					}
				}
			}
		})
	}
}

// TestRecurrentBest: where this CPU has the AVX-512 kernels, they are the
// ones that run (llama.cpp's zen4 build's order).
func TestRecurrentBest(t *testing.T) {
	for _, im := range dotF32Op.impls {
		if im.name == "avx512" && dotF32Op.impls[len(dotF32Op.impls)-1].name != "avx512" {
			t.Fatal("the avx512 kernels are registered but another runs")
		}
	}
}

// BenchmarkGatedDeltaRule: one token of one head of Qwen3.5's size (S =
// 128) per implementation.
func BenchmarkGatedDeltaRule(b *testing.B) {
	for _, s := range []int{64, 128} {
		for _, im := range deltaOp.impls {
			b.Run(fmt.Sprintf("S=%d/%s", s, im.name), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				st := randF32s(rng, s*s, 0.3)
				scale := 1 / float32(math.Sqrt(float64(s)))
				q, k, v, out := randF32s(rng, s, float64(scale)), randF32s(rng, s, float64(scale)), randF32s(rng, s, 1), make([]float32, s)
				b.SetBytes(int64(4 * s * s))
				for b.Loop() {
					// decay 1, beta 0: the state stays bounded however
					// many iterations run.
					im.f(st, q, k, v, out, 1, 0, scale)
				}
			})
		}
	}
}

// BenchmarkSSMScan: one token of one Mamba-2 head (64 channels, 128 states).
func BenchmarkSSMScan(b *testing.B) {
	for _, im := range ssmScanOp.impls {
		b.Run(im.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 4))
			const p, n = 64, 128
			st := randF32s(rng, p*n, 1)
			x, bb, cc, y := randF32s(rng, p, 1), randF32s(rng, n, 1), randF32s(rng, n, 1), make([]float32, p)
			b.SetBytes(4 * p * n)
			for b.Loop() {
				im.f(st, x, bb, cc, y, 1, 0)
			}
		})
	}
}

var recurrentInputs = flag.String("recurrent.inputs", "", "write TestRecurrentGGML's inputs (rec_*.bin, float32 little-endian) into this directory, to record ggml's results")

// recCase is one of TestRecurrentGGML's inputs: named float32 arrays.
type recCase struct {
	name string
	data [][]float32
}

// TestRecurrentGGML pins the orders to ggml's own results:
// node-llama-cpp 3.22.1's libggml-cpu-zen4.so (llama.cpp de3ff81, the
// variant its dispatch picks on this CPU) for the AVX-512 order and its
// libggml-cpu-haswell.so for the AVX2 one, one thread, run (through
// ggml_graph_compute_with_ctx, and ggml_vec_dot_f32 called directly) on
// the inputs this test writes with -recurrent.inputs: ggml_vec_dot_f32 on
// every length 0..200; ggml_gated_delta_net (scalar gate, K = 1) over 3
// tokens of 2 heads for S = 64, 128 (whole vectors), 80 and 40 (leftovers
// in every dot and update); ggml_ssm_scan (Mamba-2: A per head, 2 heads of
// 3 channels, 1 group, 3 tokens) for N = 64, 128, 80 and 17, with
// dt > 20 so that its softplus is dt itself. The digests are of ggml's
// outputs as float32 bits: the dots; the scores [T][H][S] then the final
// states [H][S][S]; y [T][H][P] then the final states [H][P][N]. Each
// build's digests are checked for its order reference and, where this CPU
// has them, its kernels.
func TestRecurrentGGML(t *testing.T) {
	const heads, toks = 2, 3
	rng := rand.New(rand.NewPCG(2026, 31))
	var cases []recCase
	// Dots.
	var dx, dy []float32
	for n := range 201 {
		dx, dy = append(dx, randF32s(rng, n, 1)...), append(dy, randF32s(rng, n, 1)...)
	}
	cases = append(cases, recCase{"dot", [][]float32{dx, dy}})
	for _, s := range []int{64, 128, 80, 40} {
		sc := 1 / math.Sqrt(float64(s))
		q, k := randF32s(rng, toks*heads*s, sc), randF32s(rng, toks*heads*s, sc)
		v, st := randF32s(rng, toks*heads*s, 1), randF32s(rng, heads*s*s, 0.3)
		g, beta := make([]float32, toks*heads), make([]float32, toks*heads)
		for i := range g {
			g[i], beta[i] = float32(-0.3*rng.Float64()), float32(rng.Float64())
		}
		cases = append(cases, recCase{fmt.Sprintf("gdn%d", s), [][]float32{q, k, v, g, beta, st}})
	}
	const p = 3
	for _, n := range []int{64, 128, 80, 17} {
		st, x := randF32s(rng, heads*p*n, 1), randF32s(rng, toks*heads*p, 0.05)
		dt, a := make([]float32, toks*heads), make([]float32, heads)
		for i := range dt {
			dt[i] = float32(20.5 + rng.Float64())
		}
		for i := range a {
			a[i] = float32(-0.01 - 0.02*rng.Float64())
		}
		b, c := randF32s(rng, toks*n, 1), randF32s(rng, toks*n, 1)
		cases = append(cases, recCase{fmt.Sprintf("ssm%d", n), [][]float32{st, x, dt, a, b, c}})
	}
	if *recurrentInputs != "" {
		for _, c := range cases {
			var buf []byte
			for _, d := range c.data {
				for _, f := range d {
					buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
				}
			}
			if err := os.WriteFile(filepath.Join(*recurrentInputs, "rec_"+c.name+".bin"), buf, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// ggml's digests per build: libggml-cpu-zen4.so (AVX-512) and
	// libggml-cpu-haswell.so (AVX2), case by case.
	ggml := map[string]map[string]string{
		"avx512": {
			"dot":    "10a712b2ec10efab807cfc21f53cb7698770f9f2f47a3a93c8471f469654c854",
			"gdn64":  "1fbbc8785bee6accd33a6d660396329dbd86f036d44551157cfa131fc8479724",
			"gdn128": "1bdc845ed96d2150ecdd16c38448bd78e2fad127d38d936401e4b5896caa4ac9",
			"gdn80":  "18dfc6a32aec0ab5aac9bc862fa14d8bcf6a7f2ada0bd8a3bec40c63cb28994a",
			"gdn40":  "e1bb0b5abaa017d80b2aeb56d9eec740a13734aacd9932c317d8fedbb6010fb2",
			"ssm64":  "d327af9e425532cbcf002095a630e70cb5c879fb684d79f439e214c0d1ddd713",
			"ssm128": "f4c076828fbb68279b45d99351959621890e5f5e4a24c6b194daa9f632438916",
			"ssm80":  "977d4bc0d71b7fdb6674bf67e5fe36fe6826e18e57f91650952e6fb83d08c64c",
			"ssm17":  "d5625c6607d0e6ca2005ba854aaccd769b3f3d2918ef0c6d7d16632ccfdbf31a",
		},
		"avx2": {
			"dot":    "0c9e03daad3f784f28c13c35dbff27f35ee87318f5f3bb0c57510a5f16191299",
			"gdn64":  "2b2a5c9fbbe00be88023799055ebc3230cdd4725ca9aea0d6c3b2ab1127bdc38",
			"gdn128": "6a2998391b4d7fc05970a70dd8c88fdb21c582facca4be08eb62198e2e0cb92e",
			"gdn80":  "392881dca1f9c81870efb6bbd43e33641beebb1474fc6d4433e4b5c6936197db",
			"gdn40":  "61f08d596ac5d84ed9b4126116597449a026793d7da4516ea1e76ea9ddcf7e86",
			"ssm64":  "9276704c92b1050c57f85c7c37eeb6428add738865a40e9976a451222001b516",
			"ssm128": "4a98cdc54136eb54148c58333f48f1e9af98c974ee7a0d2846433e90a94d3079",
			"ssm80":  "97d7e008a69bb30ac78013cc69d0ae58662e5facdbb3c8f3ee1c0cd3e0a7451a",
			"ssm17":  "d5625c6607d0e6ca2005ba854aaccd769b3f3d2918ef0c6d7d16632ccfdbf31a",
		},
	}
	type kernelsOf struct {
		build string
		dot   func(x, y []float32) float32
		delta func(state, q, k, v, out []float32, decay, beta, scale float32)
		scan  func(state, x, b, c, y []float32, dA, dt float32)
	}
	impls := map[string]kernelsOf{
		"avx512 order reference": {"avx512", orderAVX512.dot, orderAVX512.gatedDeltaRule, orderAVX512.ssmScan},
		"avx2 order reference":   {"avx2", orderAVX2.dot, orderAVX2.gatedDeltaRule, orderAVX2.ssmScan},
	}
	builds := map[f32Order]string{orderAVX512: "avx512", orderAVX2: "avx2"}
	for i, im := range dotF32Op.impls {
		if o, ok := recOrders[im.name]; ok {
			impls[im.name+" kernels"] = kernelsOf{builds[o], im.f, deltaOp.impls[i].f, ssmScanOp.impls[i].f}
		}
	}
	for name, kf := range impls {
		for _, c := range cases {
			var out []float32
			switch c.name[:3] {
			case "dot":
				off := 0
				for n := range 201 {
					out = append(out, kf.dot(c.data[0][off:off+n], c.data[1][off:off+n]))
					off += n
				}
			case "gdn":
				q, k, v, g, beta := c.data[0], c.data[1], c.data[2], c.data[3], c.data[4]
				st := append([]float32(nil), c.data[5]...)
				s := len(q) / (toks * heads)
				scale := 1 / float32(math.Sqrt(float64(s)))
				out = make([]float32, toks*heads*s)
				for h := range heads {
					for tok := range toks {
						r := (tok*heads + h) * s
						kf.delta(st[h*s*s:(h+1)*s*s], q[r:r+s], k[r:r+s], v[r:r+s], out[r:r+s],
							libm.Expf(g[tok*heads+h]), beta[tok*heads+h], scale)
					}
				}
				out = append(out, st...)
			case "ssm":
				st := append([]float32(nil), c.data[0]...)
				x, dt, a, b, cc := c.data[1], c.data[2], c.data[3], c.data[4], c.data[5]
				n := len(b) / toks
				out = make([]float32, toks*heads*p)
				for tok := range toks {
					for h := range heads {
						d := dt[tok*heads+h]
						r := (tok*heads + h) * p
						kf.scan(st[h*p*n:(h+1)*p*n], x[r:r+p], b[tok*n:(tok+1)*n], cc[tok*n:(tok+1)*n], out[r:r+p],
							libm.Expf(d*a[h]), d)
					}
				}
				out = append(out, st...)
			}
			sum := sha256.New()
			for _, f := range out {
				binary.Write(sum, binary.LittleEndian, math.Float32bits(f))
			}
			if got, want := hex.EncodeToString(sum.Sum(nil)), ggml[kf.build][c.name]; got != want {
				t.Errorf("%s %s: results digest %s, ggml's %s", name, c.name, got, want)
			}
		}
	}
}
