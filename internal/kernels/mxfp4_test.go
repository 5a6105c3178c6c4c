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

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// TestMXFP4Experts: MXFP4 expert matrices (NewMatrix, VecDotOnly, Pack, as
// model.Binder.Experts binds them) multiply in llama.cpp's order for any
// number of tokens and threads: with a multiple of 8 rows the order of its
// repacked gemv/gemm (mul_mat_id takes the repacked buffer too), packed
// 16-row groups or not (8 or 24 rows, or no AVX-512), otherwise
// ggml_vec_dot_mxfp4_q8_0's; bit for bit against the portable references,
// for any exponent byte.
func TestMXFP4Experts(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 40))
	row := table[tensor.MXFP4]
	for _, shape := range [][3]int{{8, 64}, {16, 32}, {24, 96}, {36, 2880}, {48, 2912}, {256, 256}, {13, 160}, {32, 256, 1}, {20, 256, 1}} {
		rows, cols := shape[0], shape[1]
		var data []byte
		for range rows {
			data = append(data, randomRow(rng, tensor.MXFP4, cols)...)
		}
		if shape[2] == 1 { // every exponent: subnormal scales, and sums overflowing to ±Inf and NaN
			for b := 0; b < len(data); b += lMXFP4.Size {
				data[b+lMXFP4.D] = byte(rng.Uint32())
			}
		}
		ref := row.order
		if rows%8 == 0 {
			ref = row.repack.ref
		}
		for _, expert := range []bool{true, false} {
			m, err := NewMatrix("blk.0.ffn_up_exps.weight[3]", tensor.MXFP4, rows, cols, data)
			if err != nil {
				t.Fatal(err)
			}
			m.VecDotOnly = expert
			m.Pack()
			for _, n := range []int{1, 2, 3, 4, 5, 8, 9} {
				x := make([]float32, n*cols)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				for _, threads := range []int{1, 3} {
					name := fmt.Sprintf("%dx%d/experts=%v/n%d/t%d (%s, %s)", rows, cols, expert, n, threads, m.Kernel(), m.GemmKernel())
					p := parallel.New(threads)
					got := make([]float32, n*rows)
					var ws Workspace
					ws.MatMul(p, m, x, n, got)
					p.Close()
					act := make([]byte, m.ActBytes(1))
					for tok := range n {
						row.ref.QuantizeAct(act, x[tok*cols:(tok+1)*cols])
						for r := range rows {
							w := data[r*m.RowBytes : (r+1)*m.RowBytes]
							if want := ref(cols, w, act); math.Float32bits(got[tok*rows+r]) != math.Float32bits(want) {
								t.Fatalf("%s: out[%d][%d] = %g, llama.cpp's order %g", name, tok, r, got[tok*rows+r], want)
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkMXFP4 reports GB/s of MXFP4 weights for one expert-sized
// matrix (2880×2880, gpt-oss-20b's): the portable references and this
// CPU's kernels of both of llama.cpp's orders, one token and four.
func BenchmarkMXFP4(b *testing.B) {
	const rows, cols = 2880, 2880
	rng := rand.New(rand.NewPCG(1, 2))
	var data []byte
	for range rows {
		data = append(data, randomRow(rng, tensor.MXFP4, cols)...)
	}
	r := table[tensor.MXFP4]
	for _, c := range []struct {
		name string
		set  func(m *Matrix)
	}{
		{"vec_dot order generic", func(m *Matrix) { m.rowImpl = Impl{Name: "generic", Dot: r.order} }},
		{"vec_dot order " + r.best().Name, func(m *Matrix) {}},
		{"repack order generic", func(m *Matrix) { m.rowImpl = Impl{Name: "generic", Dot: r.repack.ref} }},
		{"repack order best", func(m *Matrix) { m.Pack() }},
	} {
		for _, n := range []int{1, 4} {
			m, _ := NewMatrix("w", tensor.MXFP4, rows, cols, data)
			m.VecDotOnly = true
			c.set(m)
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			out := make([]float32, n*rows)
			var ws Workspace
			ws.Reserve(n, []*Matrix{m})
			p := parallel.New(1)
			b.Run(fmt.Sprintf("%s/%s/n%d", c.name, m.Kernel(), n), func(b *testing.B) {
				b.SetBytes(int64(len(data)) * int64(n))
				for range b.N {
					ws.MatMul(p, m, x, n, out)
				}
			})
			p.Close()
		}
	}
}

var mxfp4Inputs = flag.String("mxfp4.inputs", "", "write TestMXFP4GGMLOrders' weights and activations (p_w.bin, p_x.bin) into this directory, to record ggml's results")

// TestMXFP4GGMLOrders pins the two order references to ggml's own
// products on this machine: ggml_vec_dot_mxfp4_q8_0 and the repacked
// ggml_gemv_mxfp4_8x8_q8_0 of node-llama-cpp 3.22.1's libggml-cpu-zen4.so
// (the variant its runtime dispatch picks on this CPU), called on these
// weights (40 rows of 91 blocks, scales from the subnormal 2^−128 up) and
// six tokens of activations quantized by its quantize_row_q8_0. The
// digests are of ggml's results, [token][row] float32 bits. (Its gemm,
// ggml_gemm_mxfp4_8x8_q8_0 on activations from ggml_quantize_mat_q8_0_4x8,
// gave the gemv's results bit for bit on the first four tokens.)
func TestMXFP4GGMLOrders(t *testing.T) {
	const rows, cols, toks = 40, 2912, 6
	rng := rand.New(rand.NewPCG(2026, 39))
	l := lMXFP4
	w := make([]byte, rows*l.Blocks(cols)*l.Size)
	for i := range rows * l.Blocks(cols) {
		b := l.Block(w, i)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		b[l.D] = byte(90 + rng.IntN(76))
		if i%61 == 0 {
			b[l.D] = byte(rng.IntN(3)) // subnormal and smallest normal scales
		}
	}
	x := make([]float32, toks*cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(i/cols%3-1)))
	}
	if *mxfp4Inputs != "" {
		xb := make([]byte, 4*len(x))
		for i, f := range x {
			binary.LittleEndian.PutUint32(xb[4*i:], math.Float32bits(f))
		}
		if os.WriteFile(filepath.Join(*mxfp4Inputs, "p_w.bin"), w, 0o644) != nil || os.WriteFile(filepath.Join(*mxfp4Inputs, "p_x.bin"), xb, 0o644) != nil {
			t.Fatal("cannot write the inputs")
		}
	}
	r := table[tensor.MXFP4]
	ab, _ := tensor.RowBytes(tensor.Q8_0, cols)
	act := make([]byte, ab)
	vd, gv := sha256.New(), sha256.New()
	for tok := range toks {
		r.ref.QuantizeAct(act, x[tok*cols:(tok+1)*cols])
		for row := range rows {
			wr := w[row*len(w)/rows : (row+1)*len(w)/rows]
			binary.Write(vd, binary.LittleEndian, math.Float32bits(r.order(cols, wr, act)))
			binary.Write(gv, binary.LittleEndian, math.Float32bits(r.repack.ref(cols, wr, act)))
		}
	}
	for _, c := range []struct {
		name      string
		got, ggml string
	}{
		{"ggml_vec_dot_mxfp4_q8_0", hex.EncodeToString(vd.Sum(nil)), "f3d58008d5b953de644315bc1f8c7b2c8f8310351c5b8f1ea763b1346b66cc74"},
		{"ggml_gemv_mxfp4_8x8_q8_0", hex.EncodeToString(gv.Sum(nil)), "9c84d1fb9ac48ac5ede968ccb13c0cfbd8d28be62d9c550b816550e3d214c86a"},
	} {
		if c.got != c.ggml {
			t.Errorf("%s: results digest %s, ggml's %s", c.name, c.got, c.ggml)
		}
	}
}
