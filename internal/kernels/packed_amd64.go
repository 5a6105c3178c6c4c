//go:build amd64 && !purego

package kernels

import (
	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

//go:noescape
func gemvQ4_0r16(nb int, w, a *byte, out *float32)

//go:noescape
func gemmQ4_0r16x4(nb int, w, a *byte, astride int, out *float32, ostride int)

//go:noescape
func gemvQ4_0r16s4(nb int, w *byte, wstride int, a *byte, out *float32, ostride int)

//go:noescape
func gemvQ8_0x16s3(nb int, w *byte, wstride int, a *byte, out *float32, ostride int)

//go:noescape
func gemvQ4_0x16(nb int, w, a *byte, out *float32)

//go:noescape
func gemmQ4_0x16x2(nb int, w, a *byte, astride int, out *float32, ostride int)

//go:noescape
func gemvQ5_0x16(nb int, w, a *byte, out *float32)

//go:noescape
func gemmQ5_0x16x2(nb int, w, a *byte, astride int, out *float32, ostride int)

//go:noescape
func gemvQ4_Kx16(nb int, w, a *byte, out *float32)

//go:noescape
func gemvQ6_Kx16(nb int, w, a *byte, out *float32)

//go:noescape
func gemvQ8_0x16(nb int, w, a *byte, out *float32)

//go:noescape
func gemmQ8_0x16x2(nb int, w, a *byte, astride int, out *float32, ostride int)

// registerKernels registers packed layout f of type t (repack: the order
// of llama.cpp's own repacking) with its kernels, wrapped with the bounds
// checks that make the pointer arithmetic safe: every byte a kernel reads
// is inside the slices. Block sizes come from f and t's activation type.
func registerKernels(t tensor.DType, repack bool, f *packedFormat,
	v func(nb int, w, a *byte, out *float32),
	m2, m4 func(nb int, w, a *byte, astride int, out *float32, ostride int),
) {
	gb, ab := f.groupBlock, f.actBlock(table[t].ref.ActType)
	f.gemv = func(nb int, w, a []byte, out []float32) {
		_ = w[nb*gb-1]
		_ = a[nb*ab-1]
		_ = out[groupRows-1]
		v(nb, &w[0], &a[0], &out[0])
	}
	if m2 != nil {
		f.gemm2 = func(nb int, w, a []byte, astride int, out []float32, ostride int) {
			_ = w[nb*gb-1]
			_ = a[astride+nb*ab-1]
			_ = out[ostride+groupRows-1]
			m2(nb, &w[0], &a[0], astride, &out[0], 4*ostride)
		}
	}
	if m4 != nil {
		f.gemm4 = func(nb int, w, a []byte, astride int, out []float32, ostride int) {
			_ = w[nb*gb-1]
			_ = a[3*astride+nb*ab-1]
			_ = out[3*ostride+groupRows-1]
			m4(nb, &w[0], &a[0], astride, &out[0], 4*ostride)
		}
	}
	registerPacked(t, f, repack)
}

// registerStreams gives f's one-token product a kernel reading streams
// groups at once (see packedFormat.gemvS), bounds-checked as above.
func registerStreams(t tensor.DType, f *packedFormat, streams int, k func(nb int, w *byte, wstride int, a *byte, out *float32, ostride int)) {
	gb, ab := f.groupBlock, f.actBlock(table[t].ref.ActType)
	f.streams = streams
	f.gemvS = func(nb int, w []byte, wstride int, a []byte, out []float32, ostride int) {
		_ = w[(streams-1)*wstride+nb*gb-1]
		_ = a[nb*ab-1]
		_ = out[(streams-1)*ostride+groupRows-1]
		k(nb, &w[0], wstride, &a[0], &out[0], 4*ostride)
	}
}

func init() {
	if !(cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI) {
		return
	}
	q4tail, q4tailBytes := q8TailFast(8)
	registerKernels(tensor.Q4_0, false, &packedFormat{name: "q4_0", blockCols: lQ4_0.Elems, groupBlock: q4_0GroupBlock,
		pack: packQ4_0, tail: q4tail, tailBytes: q4tailBytes}, gemvQ4_0x16, gemmQ4_0x16x2, nil)
	q4rTail, q4rTailBytes := sumTailFast(8)
	q4r := &packedFormat{name: "q4_0 repack", blockCols: lQ4_0.Elems, groupBlock: q4_0GroupBlock,
		pack: packQ4_0, tail: q4rTail, tailBytes: q4rTailBytes, rest: table[tensor.Q4_0].repack.ref}
	registerKernels(tensor.Q4_0, true, q4r, gemvQ4_0r16, nil, gemmQ4_0r16x4)
	registerStreams(tensor.Q4_0, q4r, 4, gemvQ4_0r16s4)
	q5tail, q5tailBytes := q8TailFast(16)
	registerKernels(tensor.Q5_0, false, &packedFormat{name: "q5_0", blockCols: lQ5_0.Elems, groupBlock: q5_0GroupBlock,
		pack: packQ5_0, tail: q5tail, tailBytes: q5tailBytes}, gemvQ5_0x16, gemmQ5_0x16x2, nil)
	q8tail, q8tailBytes := q8TailFast(128)
	q8 := &packedFormat{name: "q8_0", blockCols: lQ8_0.Elems, groupBlock: q8_0GroupBlock,
		pack: packQ8_0, tail: q8tail, tailBytes: q8tailBytes}
	registerKernels(tensor.Q8_0, false, q8, gemvQ8_0x16, gemmQ8_0x16x2, nil)
	registerStreams(tensor.Q8_0, q8, 3, gemvQ8_0x16s3)
	registerKernels(tensor.Q4_K, false, &packedFormat{name: "q4_K", blockCols: lQ4_K.Elems, groupBlock: q4KGroupBlock,
		pack: packQ4_K, tail: q8KTail, tailBytes: q8KTailBytes}, gemvQ4_Kx16, nil, nil)
	registerKernels(tensor.Q6_K, false, &packedFormat{name: "q6_K", blockCols: lQ6_K.Elems, groupBlock: q6KGroupBlock,
		pack: packQ6_K, tail: q6KTail, tailBytes: q6KTailBytes}, gemvQ6_Kx16, nil, nil)
}
