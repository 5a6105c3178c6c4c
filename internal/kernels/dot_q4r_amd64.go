//go:build amd64 && !purego

package kernels

import (
	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

// AVX2 kernels in the order of llama.cpp's repacked Q4_0 (repackedOrder),
// run on the plain rows where this CPU has no packed AVX-512 VNNI
// kernels. Without them that order ran in portable Go: tinyllama-1.1b
// Q4_0 decoded at 0.25 tok/s on an AVX2-only Zen 3.

//go:noescape
func dotQ4_0RAVX2(nb int, x, y *byte) float32

//go:noescape
func dotQ4_0Rx4AVX2(nb int, x, y *byte, ystride int, out *float32)

//go:noescape
func rowsQ4_0RAVX2(nb int, x0, x1, x2, x3, y *byte, out *float32)

//go:noescape
func gemvQ4_0r16AVX2(nb int, w, a *byte, out *float32)

//go:noescape
func gemmQ4_0r16x4AVX2(nb int, w, a *byte, astride int, out *float32, ostride int)

// rows4 wraps a four-row kernel of type t over whole blocks.
func rows4(t tensor.DType, k func(nb int, x0, x1, x2, x3, y *byte, out *float32)) Rows4Func {
	bs, xb, yb := layout(t)
	return func(n int, x0, x1, x2, x3, y []byte, out []float32) {
		nb := n / bs
		if nb == 0 {
			clear(out[:4])
			return
		}
		_, _, _, _ = x0[nb*xb-1], x1[nb*xb-1], x2[nb*xb-1], x3[nb*xb-1]
		_ = y[nb*yb-1]
		_ = out[3]
		k(nb, &x0[0], &x1[0], &x2[0], &x3[0], &y[0], &out[0])
	}
}

func init() {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		return
	}
	registerRepackRows(tensor.Q4_0, Impl{Name: "avx2 q4_0 repack order",
		Dot:   blockDot(tensor.Q4_0, dotQ4_0RAVX2),
		Dot4:  dot4(tensor.Q4_0, dotQ4_0Rx4AVX2),
		Rows4: rows4(tensor.Q4_0, rowsQ4_0RAVX2)})
	// Packed 16-row groups (packQ4_0, as the AVX-512 VNNI kernels read
	// them): a register holds eight rows' same four elements, so the
	// int8 products need no horizontal sums, where the row kernels above
	// fold four rows' eight lanes every block.
	tail, tailBytes := sumTail(8)
	f := &packedFormat{name: "q4_0 repack", isa: "AVX2", blockCols: lQ4_0.Elems, groupBlock: q4_0GroupBlock,
		pack: packQ4_0, tail: tail, tailBytes: tailBytes, rest: table[tensor.Q4_0].repack.ref}
	wrapKernels(tensor.Q4_0, f, gemvQ4_0r16AVX2, nil, gemmQ4_0r16x4AVX2)
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI {
		repackAlt[tensor.Q4_0] = append(repackAlt[tensor.Q4_0], f) // packed_amd64.go registers its own
		return
	}
	registerPacked(tensor.Q4_0, f, true)
}
