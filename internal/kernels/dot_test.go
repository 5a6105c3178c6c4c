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

// randomRow makes n elements of type t: valid random blocks (finite f16
// scales, random quants), or random floats for float types.
func randomRow(rng *rand.Rand, t tensor.DType, n int) []byte {
	rb, err := tensor.RowBytes(t, uint64(n))
	if err != nil {
		panic(err)
	}
	b := make([]byte, rb)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	scale := func(off int) {
		binary.LittleEndian.PutUint16(b[off:], quant.F32ToF16(float32(rng.NormFloat64()*0.01)))
	}
	switch t {
	case tensor.F32:
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(rng.NormFloat64())))
		}
	case tensor.F16:
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(b[2*i:], quant.F32ToF16(float32(rng.NormFloat64())))
		}
	case tensor.BF16:
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(b[2*i:], quant.F32ToBF16(float32(rng.NormFloat64())))
		}
	case tensor.MXFP4: // E8M0 exponents of weights around 2^-10 … 2^5 (d = 2^(e−128))
		l := quant.LayoutOf(t)
		for i := range l.Blocks(n) {
			b[i*l.Size+l.D] = byte(118 + rng.IntN(16))
		}
	default: // every block's f16 scale (and min) finite, from its layout
		l := quant.LayoutOf(t)
		for i := range l.Blocks(n) {
			scale(i*l.Size + l.D)
			if l.M >= 0 {
				scale(i*l.Size + l.M)
			}
		}
	}
	return b
}

// avx512Order: the float types whose order references follow
// the AVX-512 build's vec_dot; the implementations named "avx512" and
// "avx2" have that order ("avx2+avx512vl", the four-token F16 kernel of
// AVX-512 CPUs without DQ, has the AVX2 build's).
var avx512Order = map[tensor.DType]bool{tensor.F16: true, tensor.BF16: true, tensor.F32: true}

// inAVX512Order: impl keeps type t's AVX-512 order.
func inAVX512Order(t tensor.DType, impl string) bool {
	return !avx512Order[t] || impl == "avx512" || impl == "avx2"
}

// TestDotOrderExact: each kernel with an order reference equals it bit for
// bit, every length up to 40 blocks. Where this build has no SIMD kernel
// for a type (purego, or a CPU without them), the order references are
// checked against the plain reference instead (same sum, other order:
// within float noise), and the test says so.
func TestDotOrderExact(t *testing.T) {
	for typ, refs := range table {
		ref := refs.order
		if ref == nil {
			continue // TestTypeTable checks that the row says why
		}
		if len(Impls(typ)) == 1 {
			checkOrderReference(t, typ, refs.order, refs.batch)
			continue
		}
		for _, impl := range Impls(typ)[1:] {
			if !inAVX512Order(typ, impl.Name) {
				continue
			}
			rng := rand.New(rand.NewPCG(4, uint64(typ)))
			bs := max(typ.BlockSize(), 1)
			for n := bs; n <= 40*max(bs, 32); n += bs {
				w, act := randomRowAct(rng, typ, n)
				if got, want := impl.Dot(n, w, act), ref(n, w, act); math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%v/%s n=%d: %v, reference %v", typ, impl.Name, n, got, want)
				}
				if br := refs.batch; br != nil {
					if impl.Batch == nil {
						t.Fatalf("%v/%s: no batch kernel", typ, impl.Name)
					}
					if got, want := impl.Batch(n, w, act), br(n, w, act); math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("%v/%s batch n=%d: %v, reference %v", typ, impl.Name, n, got, want)
					}
				}
			}
		}
	}
}

// TestBestIsOrder: the kernel a one-token product runs is the one in
// ggml's AVX-512 order wherever this CPU has it, the AVX-512 kernel over
// the AVX2 one (registration order must not let another kernel take over).
func TestBestIsOrder(t *testing.T) {
	for typ := range avx512Order {
		want := ""
		for _, impl := range Impls(typ)[1:] {
			if impl.Name == "avx512" || (impl.Name == "avx2" && want == "") {
				want = impl.Name
			}
		}
		if got := table[typ].best().Name; want != "" && got != want {
			t.Errorf("%v: one token runs %q, not the %s order kernel", typ, got, want)
		}
	}
}

// randomRowAct makes a random weight row of n elements and a random
// activation row quantized to the type's vec_dot input.
func randomRowAct(rng *rand.Rand, typ tensor.DType, n int) (w, act []byte) {
	ops, _ := quant.For(typ)
	w = randomRow(rng, typ, n)
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	ab, _ := tensor.RowBytes(ops.ActType, uint64(n))
	act = make([]byte, int(ab))
	ops.QuantizeAct(act, x)
	return w, act
}

// checkOrderReference compares a type's order references with its plain
// reference: the same dot product summed in another order.
func checkOrderReference(t *testing.T, typ tensor.DType, dot, batch DotFunc) {
	t.Logf("%v: no SIMD kernel in this build: its order reference is checked against the plain reference (within float noise), not bit for bit", typ)
	ops, _ := quant.For(typ)
	rng := rand.New(rand.NewPCG(5, uint64(typ)))
	bs := max(typ.BlockSize(), 1)
	for n := bs; n <= 40*max(bs, 32); n += bs {
		w, act := randomRowAct(rng, typ, n)
		want := float64(ops.Dot(n, w, act))
		for name, f := range map[string]DotFunc{"order": dot, "batch order": batch} {
			if f == nil {
				continue
			}
			// The terms are O(1) and there are n of them: rounding in
			// another order moves the sum by a few ulps of √n-sized values.
			if got := float64(f(n, w, act)); math.Abs(got-want) > 1e-4*math.Sqrt(float64(n))*math.Max(1, math.Abs(want))/8 {
				t.Fatalf("%v %s reference n=%d: %v, plain reference %v", typ, name, n, got, want)
			}
		}
	}
}

// TestDotImpls runs every implementation this CPU supports against the
// generic reference, for all lengths up to 40 blocks (tails included).
func TestDotImpls(t *testing.T) {
	for _, typ := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q5_0, tensor.F16, tensor.BF16, tensor.Q4_K, tensor.Q6_K,
		tensor.Q4_1, tensor.Q5_1, tensor.Q5_K, tensor.Q2_K, tensor.Q3_K, tensor.IQ4_NL, tensor.MXFP4} {
		ops, _ := quant.For(typ)
		impls := Impls(typ)
		if ref := table[typ].order; ref != nil && !avx512Order[typ] {
			impls = append(impls, Impl{Name: "order reference", Dot: ref})
		}
		for _, impl := range impls[1:] {
			t.Run(typ.String()+"/"+impl.Name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(1, uint64(typ)))
				bs := typ.BlockSize()
				step := max(bs, 1)
				for n := 0; n <= 40*max(bs, 32); n += step {
					if (typ == tensor.F16 || typ == tensor.BF16) && n > 64 && n%8 == 0 {
						n += 3 // odd lengths for the float kernel's tail
					}
					w := randomRow(rng, typ, n)
					x := make([]float32, n)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					ab, _ := tensor.RowBytes(ops.ActType, uint64(n))
					act := make([]byte, int(ab))
					if n > 0 {
						ops.QuantizeAct(act, x)
					}
					want := float64(impls[0].Dot(n, w, act))
					got := float64(impl.Dot(n, w, act))
					// Same integer sums, different float order: a few ulps
					// of the magnitude of the terms.
					wv := make([]float32, n)
					ops.Dequant(wv, w)
					var mag float64
					for i := range wv {
						mag += math.Abs(float64(wv[i] * x[i]))
					}
					if math.Abs(got-want) > 1e-5*mag+1e-30 {
						t.Fatalf("n=%d: %s %v, generic %v", n, impl.Name, got, want)
					}
				}
			})
		}
	}
}

// BenchmarkDot reports GB/s of weight bytes read per implementation.
func BenchmarkDot(b *testing.B) {
	const n = 4096
	for _, typ := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.F16, tensor.F32, tensor.BF16, tensor.Q4_K, tensor.Q6_K,
		tensor.Q4_1, tensor.Q5_1, tensor.Q5_K, tensor.Q2_K, tensor.Q3_K, tensor.IQ4_NL, tensor.MXFP4} {
		ops, _ := quant.For(typ)
		rng := rand.New(rand.NewPCG(2, 3))
		w := randomRow(rng, typ, n)
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		ab, _ := tensor.RowBytes(ops.ActType, n)
		act := make([]byte, int(ab))
		ops.QuantizeAct(act, x)
		for _, impl := range Impls(typ) {
			b.Run(typ.String()+"/"+impl.Name, func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				for range b.N {
					impl.Dot(n, w, act)
				}
			})
		}
	}
}

// TestDot4Exact: the four-token kernels give exactly their one-token
// kernel's results (same operations per pair, in the same order).
// TestRows4Exact: every four-row kernel gives each row the registered
// one-token kernel's result bit for bit, at every length's tail, with
// rows placed anywhere (decode hands it rows far apart).
func TestRows4Exact(t *testing.T) {
	ran := 0
	for _, typ := range []tensor.DType{tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q5_0} {
		ops, _ := quant.For(typ)
		step := 7 // lengths with every tail
		if typ.BlockSize() > 1 {
			step = typ.BlockSize()
		}
		for _, impl := range Impls(typ) {
			if impl.Rows4 == nil {
				continue
			}
			ran++
			t.Run(typ.String()+"/"+impl.Name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(11, uint64(typ)))
				for n := 0; n <= 20*32; n += step {
					var w [4][]byte
					for r := range w {
						w[r] = randomRow(rng, typ, n)
					}
					ab, _ := tensor.RowBytes(ops.ActType, uint64(n))
					act := make([]byte, ab)
					x := make([]float32, n)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					if n > 0 {
						ops.QuantizeAct(act, x)
					}
					y := act
					if impl.Narrow != nil {
						// Sized exactly, so a read past the row fails.
						y = make([]byte, 2*n)
						impl.Narrow(y, act, n)
					}
					got := []float32{-1, -1, -1, -1}
					impl.Rows4(n, w[0], w[1], w[2], w[3], y, got)
					for r := range w {
						want := impl.Dot(n, w[r], act)
						if math.Float32bits(got[r]) != math.Float32bits(want) {
							t.Fatalf("n=%d row %d: %v, one-token kernel %v", n, r, got[r], want)
						}
					}
				}
			})
		}
	}
	if ran == 0 {
		t.Skip("no four-row kernel on this CPU")
	}
}

// TestOneTokenRows: a one-token product, which reads its rows in
// quarters where a four-row kernel exists, gives every row the one-token
// kernel's result, for row counts that leave every remainder and thread
// counts that split the rows unevenly.
func TestOneTokenRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, typ := range []tensor.DType{tensor.F16, tensor.BF16} {
		ops, _ := quant.For(typ)
		for _, rows := range []int{1, 3, 4, 5, 7, 8, 13, 53, 103} {
			const cols = 200 // a tail past the last multiple of 64
			data := randomFloatRows(rng, typ, rows, cols)
			m, err := NewMatrix("w", typ, rows, cols, data)
			if err != nil {
				t.Fatal(err)
			}
			x := randomInput(rng, cols)
			ab, _ := tensor.RowBytes(ops.ActType, cols)
			act := make([]byte, ab)
			ops.QuantizeAct(act, x)
			dot := m.plan(1).rows.Dot
			for _, threads := range []int{1, 3} {
				p := parallel.New(threads)
				got := make([]float32, rows)
				new(Workspace).MatMul(p, m, x, 1, got)
				p.Close()
				for r := range rows {
					want := dot(cols, data[r*m.RowBytes:(r+1)*m.RowBytes], act)
					if math.Float32bits(got[r]) != math.Float32bits(want) {
						t.Fatalf("%v %d rows, %d threads: row %d = %v, one-token kernel %v", typ, rows, threads, r, got[r], want)
					}
				}
			}
		}
	}
}

func TestDot4Exact(t *testing.T) {
	for _, typ := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.F16, tensor.BF16, tensor.Q4_K, tensor.Q5_0, tensor.Q6_K} {
		ops, _ := quant.For(typ)
		step := typ.BlockSize()
		if typ == tensor.F16 || typ == tensor.BF16 {
			step = 13 // lengths with every tail
		}
		for _, impl := range Impls(typ) {
			if impl.Dot4 == nil {
				continue
			}
			t.Run(typ.String()+"/"+impl.Name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(7, uint64(typ)))
				for n := 0; n <= 20*max(step, 32); n += step {
					w := randomRow(rng, typ, n)
					ab, _ := tensor.RowBytes(ops.ActType, uint64(n))
					stride := int(ab) + 5 // an odd stride, as a tail may make it
					act := make([]byte, 4*stride)
					x := make([]float32, n)
					for k := range 4 {
						for i := range x {
							x[i] = float32(rng.NormFloat64())
						}
						if n > 0 {
							ops.QuantizeAct(act[k*stride:k*stride+int(ab)], x)
						}
					}
					var got [4]float32
					impl.Dot4(n, w, act, stride, got[:])
					for k := range 4 {
						want := impl.Dot(n, w, act[k*stride:k*stride+int(ab)])
						if math.Float32bits(got[k]) != math.Float32bits(want) {
							t.Fatalf("n=%d token %d: %v, one-token kernel %v", n, k, got[k], want)
						}
					}
				}
			})
		}
	}
}
