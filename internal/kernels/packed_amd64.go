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

// packedKernels wraps the assembly with the bounds checks that make the
// pointer arithmetic safe: every byte a kernel reads is inside the slices.
func packedKernels(groupBlock, actBlock int,
	v func(nb int, w, a *byte, out *float32),
	m2 func(nb int, w, a *byte, astride int, out *float32, ostride int),
) (func(int, []byte, []byte, []float32), func(int, []byte, []byte, int, []float32, int)) {
	gemv := func(nb int, w, a []byte, out []float32) {
		_ = w[nb*groupBlock-1]
		_ = a[nb*actBlock-1]
		_ = out[groupRows-1]
		v(nb, &w[0], &a[0], &out[0])
	}
	if m2 == nil {
		return gemv, nil
	}
	gemm2 := func(nb int, w, a []byte, astride int, out []float32, ostride int) {
		_ = w[nb*groupBlock-1]
		_ = a[astride+nb*actBlock-1]
		_ = out[ostride+groupRows-1]
		m2(nb, &w[0], &a[0], astride, &out[0], 4*ostride)
	}
	return gemv, gemm2
}

// packedKernels4 wraps a four-token kernel like packedKernels.
func packedKernels4(groupBlock, actBlock int, m4 func(nb int, w, a *byte, astride int, out *float32, ostride int),
) func(int, []byte, []byte, int, []float32, int) {
	return func(nb int, w, a []byte, astride int, out []float32, ostride int) {
		_ = w[nb*groupBlock-1]
		_ = a[3*astride+nb*actBlock-1]
		_ = out[3*ostride+groupRows-1]
		m4(nb, &w[0], &a[0], astride, &out[0], 4*ostride)
	}
}

func init() {
	if !(cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI) {
		return
	}
	q4 := &packedFormat{name: "q4_0", blockCols: 32, groupBlock: 288, pack: packQ4_0}
	q4.tail, q4.tailBytes = q8Tail(8)
	q4.gemv, q4.gemm2 = packedKernels(288, 70, gemvQ4_0x16, gemmQ4_0x16x2)
	packedFormats[tensor.Q4_0] = q4
	q4r := &packedFormat{name: "q4_0 repack", blockCols: 32, groupBlock: 288, pack: packQ4_0,
		tail: q4rTail, tailBytes: q4rTailBytes, rest: repackOrders[tensor.Q4_0].ref}
	q4r.gemv, _ = packedKernels(288, 42, gemvQ4_0r16, nil)
	q4r.gemm4 = packedKernels4(288, 42, gemmQ4_0r16x4)
	repackOrders[tensor.Q4_0].format = q4r
	q5 := &packedFormat{name: "q5_0", blockCols: 32, groupBlock: 352, pack: packQ5_0}
	q5.tail, q5.tailBytes = q8Tail(16)
	q5.gemv, q5.gemm2 = packedKernels(352, 70, gemvQ5_0x16, gemmQ5_0x16x2)
	packedFormats[tensor.Q5_0] = q5
	q8 := &packedFormat{name: "q8_0", blockCols: 32, groupBlock: 544, pack: packQ8_0}
	q8.tail, q8.tailBytes = q8Tail(128)
	q8.gemv, q8.gemm2 = packedKernels(544, 70, gemvQ8_0x16, gemmQ8_0x16x2)
	packedFormats[tensor.Q8_0] = q8
	q4k := &packedFormat{name: "q4_K", blockCols: 256, groupBlock: q4KGroupBlock, pack: packQ4_K,
		tail: q8KTail, tailBytes: q8KTailBytes}
	q4k.gemv, _ = packedKernels(q4KGroupBlock, 292+16, gemvQ4_Kx16, nil)
	packedFormats[tensor.Q4_K] = q4k
	q6k := &packedFormat{name: "q6_K", blockCols: 256, groupBlock: q6KGroupBlock, pack: packQ6_K,
		tail: q6KTail, tailBytes: q6KTailBytes}
	q6k.gemv, _ = packedKernels(q6KGroupBlock, 292+256, gemvQ6_Kx16, nil)
	packedFormats[tensor.Q6_K] = q6k
}
