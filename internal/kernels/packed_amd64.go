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
func gemmQ4_0r16x4GFNI(nb int, w, a *byte, astride int, out *float32, ostride int)

//go:noescape
func gemvQ4_0r16s4GFNI(nb int, w *byte, wstride int, a *byte, out *float32, ostride int)

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
func gemvQ4_Kx16GFNI(nb int, w, a *byte, out *float32)

//go:noescape
func reduceQ4_Kx16(acc, out *float32)

//go:noescape
func gemvQ4_Kx16acc(nb int, w, a, tail *byte, acc *float32)

//go:noescape
func gemvQ6_Kx16(nb int, w, a *byte, out *float32)

//go:noescape
func gemvQ6_Kx16GFNI(nb int, w, a *byte, out *float32)

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
	wrapKernels(t, f, v, m2, m4)
	registerPacked(t, f, repack)
}

// wrapKernels sets f's kernels (registerKernels) without registering f.
func wrapKernels(t tensor.DType, f *packedFormat,
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
}

// kernelSet is a packed format's kernels: one token (v), four tokens
// (m4, may be nil) and one token over four streams (s4, may be nil).
type kernelSet struct {
	v  func(nb int, w, a *byte, out *float32)
	m4 func(nb int, w, a *byte, astride int, out *float32, ostride int)
	s4 func(nb int, w *byte, wstride int, a *byte, out *float32, ostride int)
}

// registerGFNI registers packed layout f of type t with kernels gfni where
// the CPU has AVX-512 GFNI, else with plain. The GFNI kernels compute the
// same results in fewer instructions (a nibble or bit-field split by
// VGF2P8AFFINEQB), which the one-token products need on Zen 5, whose
// rate out of memory falls with the instructions per byte (see
// docs/performance.md, session 37). On such CPUs a copy of f with the
// plain kernels goes into alt (repackAlt, packedAlt), which the tests run.
func registerGFNI(t tensor.DType, repack bool, f *packedFormat, alt map[tensor.DType][]*packedFormat, plain, gfni kernelSet) {
	ks := plain
	if cpu.X86.HasAVX512GFNI {
		p := *f
		wrapKernels(t, &p, plain.v, nil, plain.m4)
		if plain.s4 != nil {
			registerStreams(t, &p, 4, plain.s4)
		}
		alt[t] = append(alt[t], &p)
		f.isa, ks = "AVX-512 VNNI, GFNI", gfni
	}
	registerKernels(t, repack, f, ks.v, nil, ks.m4)
	if ks.s4 != nil {
		registerStreams(t, f, 4, ks.s4)
	}
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

// registerQ4KStreams gives packed Q4_K format f a two-stream one-token
// product (gemvS): gemvQ4_Kx16acc, which carries a group's twelve
// accumulator vectors in memory from one call to the next, called for
// super-block b of the first group, then super-block b of the second,
// through the same instructions, one call each; then reduceQ4_Kx16
// finishes each group as gemvQ4_Kx16 does, bit for bit. The kernels are
// called directly (not through func values) so acc stays on the stack.
//
// Why calls per super-block: on Zen 4 (one thread, packed Q4_K, weights on
// huge pages) two streams half a worker's range apart read about 10%
// faster than one, but only this way. The same alternation inside one
// kernel, with the idle group's accumulators stored to the stack and
// loaded back each super-block, gained 6% for Q4_K and lost 8–23% for
// Q6_K; the stores alone (timing-only variants) took the gain away and the
// loads alone kept it. Two copies of the block's code, one per stream,
// gained nothing; two streams near each other (adjacent groups) read 40%
// slower. Q6_K loses with this product too (0.82–0.93 on a tinyllama
// layer's shapes), so only Q4_K has it; at two threads (four streams)
// loom bench decode lost 1–6%, and up to 40% in the machine's fast
// bandwidth mode, so it runs where one thread does the product
// (streamsAlone). See docs/performance.md, session 31.
func registerQ4KStreams(f *packedFormat) {
	gb, ab, tb := q4KGroupBlock, lQ8_K.Size, q8KTailBytes(lQ8_K.Elems) // group block; Q8_K block, its tail (q8KTail)
	f.streams, f.streamsAlone = 2, true
	f.gemvS = func(nb int, w []byte, wstride int, a []byte, out []float32, ostride int) {
		_ = w[wstride+nb*gb-1]
		_ = a[nb*(ab+tb)-1]
		_ = out[ostride+groupRows-1]
		var acc [2][12 * groupRows]float32 // [group][12 vectors × 16 rows]
		for b := range nb {
			x, tail := &a[b*ab], &a[nb*ab+b*tb]
			gemvQ4_Kx16acc(1, &w[b*gb], x, tail, &acc[0][0])
			gemvQ4_Kx16acc(1, &w[wstride+b*gb], x, tail, &acc[1][0])
		}
		reduceQ4_Kx16(&acc[0][0], &out[0])
		reduceQ4_Kx16(&acc[1][0], &out[ostride])
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
	registerGFNI(tensor.Q4_0, true, q4r, repackAlt,
		kernelSet{gemvQ4_0r16, gemmQ4_0r16x4, gemvQ4_0r16s4},
		kernelSet{gemvQ4_0r16, gemmQ4_0r16x4GFNI, gemvQ4_0r16s4GFNI})
	q5tail, q5tailBytes := q8TailFast(16)
	registerKernels(tensor.Q5_0, false, &packedFormat{name: "q5_0", blockCols: lQ5_0.Elems, groupBlock: q5_0GroupBlock,
		pack: packQ5_0, tail: q5tail, tailBytes: q5tailBytes}, gemvQ5_0x16, gemmQ5_0x16x2, nil)
	q8tail, q8tailBytes := q8TailFast(128)
	q8 := &packedFormat{name: "q8_0", blockCols: lQ8_0.Elems, groupBlock: q8_0GroupBlock,
		pack: packQ8_0, tail: q8tail, tailBytes: q8tailBytes}
	registerKernels(tensor.Q8_0, false, q8, gemvQ8_0x16, gemmQ8_0x16x2, nil)
	registerStreams(tensor.Q8_0, q8, 3, gemvQ8_0x16s3)
	q4k := &packedFormat{name: "q4_K", blockCols: lQ4_K.Elems, groupBlock: q4KGroupBlock,
		pack: packQ4_K, tail: q8KTail, tailBytes: q8KTailBytes}
	registerGFNI(tensor.Q4_K, false, q4k, packedAlt, kernelSet{v: gemvQ4_Kx16}, kernelSet{v: gemvQ4_Kx16GFNI})
	if !packedPrefetch {
		// Measured on Zen 4 only, whose one-token kernels run without
		// prefetches (the accumulating kernel has none). Decided once,
		// here: setting packedPrefetch later does not change it.
		registerQ4KStreams(q4k)
	}
	q6k := &packedFormat{name: "q6_K", blockCols: lQ6_K.Elems, groupBlock: q6KGroupBlock,
		pack: packQ6_K, tail: q6KTail, tailBytes: q6KTailBytes}
	registerGFNI(tensor.Q6_K, false, q6k, packedAlt, kernelSet{v: gemvQ6_Kx16}, kernelSet{v: gemvQ6_Kx16GFNI})
}
