package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/loom-inference/loom/internal/hugepage"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Packed weights. At load time Q4_0, Q5_0, Q8_0 and MXFP4 matrices are
// repacked into groups of 16 rows whose blocks are interleaved so that one
// SIMD register holds the same four elements of all sixteen rows
// (llama.cpp repacks Q4_0 and MXFP4 for the same reason). Per group and
// 32-column block:
//
//	scales [16]f16                     the rows' block scales
//	quants 16 rows × 32 elements       as 4-byte lanes: lane k of row r =
//	                                   elements 4k..4k+3 of that row
//
// Q4_0 keeps its nibble pairing: register j (j < 4) holds qs[4j..4j+3] of
// each row, low nibbles lane j, high nibbles lane 4+j (qs[i] holds elements
// i and i+16); 288 bytes per group block. MXFP4 pairs its nibbles the same
// way, after 16 E8M0 exponent bytes in place of the f16 scales; 272 bytes.
// Q8_0 stores w XOR 0x80 (w+128, so the bytes are unsigned for VPDPBUSD)
// in eight registers; 544 bytes.
//
// Each worker then streams one contiguous group after another: decode reads
// the weights once, sequentially, and every activation load serves sixteen
// rows instead of one.
const groupRows = 16

// repackAlt holds, per type, the packed formats in llama.cpp's repacked
// order that this CPU can run but that are not registered here (the AVX2
// kernels where the AVX-512 VNNI ones take over), which the tests run too.
var repackAlt = map[tensor.DType][]*packedFormat{}

// packedAlt is repackAlt for the packed formats in the order of ggml's
// row kernels (packedFormat of table's entries): the kernels a CPU can
// run but does not choose (without GFNI where it has GFNI).
var packedAlt = map[tensor.DType][]*packedFormat{}

// packedFormat describes one packed layout and its kernels.
type packedFormat struct {
	name       string
	isa        string                // the kernels' instruction set ("": AVX-512 VNNI)
	blockCols  int                   // columns per (super-)block
	groupBlock int                   // bytes per group per block
	pack       func(dst, src []byte) // one group block from 16 source blocks (src: 16 × typeSize, row-major)
	// tail appends what the kernels read after an activation row of cols
	// elements (in the type's ActType), tailBytes its size.
	tail      func(row []byte, cols int)
	tailBytes func(cols int) int
	gemv      func(nb int, w, a []byte, out []float32)
	gemm2     func(nb int, w, a []byte, astride int, out []float32, ostride int) // two tokens; ostride in floats; nil: gemv per token
	gemm4     func(nb int, w, a []byte, astride int, out []float32, ostride int) // four tokens, like gemm2; may be nil
	// gemvS, when set, is gemv over streams groups at once, wstride bytes
	// and ostride floats apart, each group gemv's result bit for bit: one
	// token reads a worker's groups as that many sequential streams.
	gemvS   func(nb int, w []byte, wstride int, a []byte, out []float32, ostride int)
	streams int
	// streamsAlone: gemvS only where one thread runs the product.
	streamsAlone bool
	// rest, when set, computes the rows past the last full group (and is
	// the kernels' reference): formats whose order differs from the type's
	// vec_dot. Its activations are the packed ones (blocks, then the tail).
	rest DotFunc
}

// The weight layouts the packed formats read.
var (
	lQ4_0 = quant.LayoutOf(tensor.Q4_0)
	lQ5_0 = quant.LayoutOf(tensor.Q5_0)
)

// packQ4_0 interleaves 16 Q4_0 blocks into one group block: the rows'
// scales, then their 16 nibble bytes as four 4-byte lanes each.
func packQ4_0(dst, src []byte) {
	for r := range groupRows {
		b := lQ4_0.Block(src, r)
		copy(dst[2*r:2*r+2], b[lQ4_0.D:])
		for j := range 4 {
			copy(dst[32+64*j+4*r:32+64*j+4*r+4], b[lQ4_0.QS+4*j:])
		}
	}
}

// packQ5_0 interleaves 16 Q5_0 blocks into one 352-byte group block:
// scales and nibbles as Q4_0's, then 64 bytes of fifth bits, byte b of
// row r holding in bit k the fifth bit of element 4k+b (lane k; for k ≥ 4
// that is the high nibble of qs[4(k-4)+b]). The fifth bits come from the
// shared Q5_0 decoder (q + 16 ≥ 16).
func packQ5_0(dst, src []byte) {
	var k quant.Block32
	for r := range groupRows {
		b := lQ5_0.Block(src, r)
		copy(dst[2*r:2*r+2], b[lQ5_0.D:])
		for j := range 4 {
			copy(dst[32+64*j+4*r:32+64*j+4*r+4], b[lQ5_0.QS+4*j:])
		}
		k = decQ5_0(b)
		for e := range 4 {
			var h byte
			for lane := range 8 {
				h |= byte((k.Q[4*lane+e]+16)>>4&1) << lane
			}
			dst[q4_0GroupBlock+4*r+e] = h
		}
	}
}

var decQ5_0 = quant.Decode32(tensor.Q5_0)

// packQ8_0 interleaves 16 Q8_0 blocks into one group block, each quant
// stored as w XOR 0x80 (w + 128, unsigned for VPDPBUSD).
func packQ8_0(dst, src []byte) {
	for r := range groupRows {
		b := lQ8_0.Block(src, r)
		copy(dst[2*r:2*r+2], b[lQ8_0.D:])
		qs := b[lQ8_0.QS:]
		for k := range 8 {
			for i := range 4 {
				dst[32+64*k+4*r+i] = qs[4*k+i] ^ 0x80
			}
		}
	}
}

// packMXFP4 interleaves 16 MXFP4 blocks into one group block: the rows'
// E8M0 exponent bytes, then their 16 nibble bytes as four 4-byte lanes
// each (Q4_0's pairing: register j holds qs[4j..4j+3] of every row).
func packMXFP4(dst, src []byte) {
	for r := range groupRows {
		b := lMXFP4.Block(src, r)
		dst[r] = b[lMXFP4.D]
		for j := range 4 {
			copy(dst[groupRows+64*j+4*r:groupRows+64*j+4*r+4], b[lMXFP4.QS+4*j:])
		}
	}
}

var lMXFP4 = quant.LayoutOf(tensor.MXFP4)

// Bytes per group of 16 rows and block, of the 32-element packed formats:
// 16 f16 scales, 16 rows × 16 nibble bytes, and for Q5_0 16 × 4 bytes of
// fifth bits, for Q8_0 16 × 32 quant bytes.
const (
	q4_0GroupBlock  = groupRows * (2 + 16)
	q5_0GroupBlock  = q4_0GroupBlock + groupRows*4
	q8_0GroupBlock  = groupRows * (2 + 32)
	mxfp4GroupBlock = groupRows * (1 + 16) // exponents, then nibbles
)

// repack builds the packed copy of m's full 16-row groups, the groups split
// over the CPUs (load time: a 1B model's repack took 0.8–1.5 s on one).
// dst, when not nil, is its packedSize(f) bytes (PackAll's arena);
// otherwise the copy is allocated here.
func (m *Matrix) repack(f *packedFormat, dst []byte) {
	groups := m.Rows / groupRows
	nb := m.Cols / f.blockCols
	tsz := m.Type.Traits().TypeSize
	if dst == nil {
		dst = make([]byte, m.packedSize(f))
		// Read through once per token: on huge pages, as the kernel
		// allows (advised before the first write, so faults take 2 MiB
		// at a time).
		hugepage.Advise(dst)
	}
	m.packed = dst[:m.packedSize(f)]
	workers := max(1, min(runtime.GOMAXPROCS(0), groups/64))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			src := make([]byte, groupRows*tsz)
			for g := groups * w / workers; g < groups*(w+1)/workers; g++ {
				for b := range nb {
					for r := range groupRows {
						row := (g*groupRows + r) * m.RowBytes
						copy(src[r*tsz:(r+1)*tsz], m.Data[row+b*tsz:row+(b+1)*tsz])
					}
					f.pack(m.packed[(g*nb+b)*f.groupBlock:], src)
				}
			}
		})
	}
	wg.Wait()
	m.pf = f
}

// packedSize is the bytes of m's full 16-row groups in format f.
func (m *Matrix) packedSize(f *packedFormat) int {
	return m.Rows / groupRows * (m.Cols / f.blockCols) * f.groupBlock
}

// q8Tail returns the tail of Q4_0/Q8_0 packed kernels: per block float32
// d_a and eight int32 corrections −off·Σ a[4k..4k+3], the term that turns
// Σ (w+off)·a, which VPDPBUSD computes on unsigned w+off, back into Σ w·a,
// exactly (int32).
func q8Tail(off int32) (func(row []byte, n int), func(n int) int) {
	return func(row []byte, n int) {
			nb := lQ8_0.Blocks(n)
			tail := row[nb*lQ8_0.Size:]
			for b := range nb {
				blk := lQ8_0.Block(row, b)
				t := tail[q8TailBlock*b : q8TailBlock*(b+1)]
				putF32(t, f16le(blk[lQ8_0.D:]))
				putLaneCorrections(t[4:], blk[lQ8_0.QS:lQ8_0.QS+32], off)
			}
		}, func(n int) int {
			return q8TailBlock * lQ8_0.Blocks(n)
		}
}

// q8TailBlock is the tail per block: float32 d_a, eight int32 corrections.
const q8TailBlock = 4 + 8*4

// putLaneCorrections stores, for every 4-byte lane of the int8 values qs,
// the int32 −off·Σ lane at dst (4 bytes per lane).
func putLaneCorrections(dst, qs []byte, off int32) {
	for k := range len(qs) / 4 {
		var s int32
		for _, q := range qs[4*k : 4*k+4] {
			s += int32(int8(q))
		}
		binary.LittleEndian.PutUint32(dst[4*k:], uint32(-off*s))
	}
}

// packedDo computes output rows [16·lo, 16·hi) of a packed product.
func (t *mmTask) packedDo(lo, hi int) {
	m, f := t.m, t.m.pf
	nb := m.Cols / f.blockCols
	rows := m.Rows
	gb := nb * f.groupBlock
	if s := f.streams; f.gemvS != nil && t.n == 1 && hi-lo >= s && (t.oneThread || !f.streamsAlone) {
		// One token: s sequential streams, (hi−lo)/s groups apart, then
		// the groups they leave.
		q := (hi - lo) / s
		a := t.act[:m.actRow]
		for g := lo; g < lo+q; g++ {
			r0 := g * groupRows
			f.gemvS(nb, m.packed[g*gb:(g+(s-1)*q+1)*gb], q*gb, a, t.out[r0:r0+(s-1)*q*groupRows+groupRows], q*groupRows)
		}
		lo += s * q
	}
	for g := lo; g < hi; g++ {
		w := m.packed[g*gb : (g+1)*gb]
		r0 := g * groupRows
		i := 0
		for ; f.gemm4 != nil && i+4 <= t.n; i += 4 {
			f.gemm4(nb, w, t.act[i*m.actRow:(i+4)*m.actRow], m.actRow, t.out[i*rows+r0:(i+3)*rows+r0+groupRows], rows)
		}
		for ; f.gemm2 != nil && i+2 <= t.n; i += 2 {
			f.gemm2(nb, w, t.act[i*m.actRow:(i+2)*m.actRow], m.actRow, t.out[i*rows+r0:(i+1)*rows+r0+groupRows], rows)
		}
		for ; i < t.n; i++ {
			f.gemv(nb, w, t.act[i*m.actRow:(i+1)*m.actRow], t.out[i*rows+r0:i*rows+r0+groupRows])
		}
	}
}

// sumTail returns the activation tail of the repack-order kernels (Q4_0,
// MXFP4): per block float32 d_a and the int32 −off·Σa that turns
// VPDPBUSD's Σ (w+off)·a on unsigned w+off (Q4_0's raw nibbles, off 8;
// MXFP4's codes biased by 12) into Σ w·a, exactly.
func sumTail(off int32) (func(row []byte, n int), func(n int) int) {
	return func(row []byte, n int) {
			nb := lQ8_0.Blocks(n)
			tail := row[nb*lQ8_0.Size:]
			for b := range nb {
				blk := lQ8_0.Block(row, b)
				t := tail[sumTailBlock*b : sumTailBlock*(b+1)]
				putF32(t, f16le(blk[lQ8_0.D:]))
				var s int32
				for _, q := range blk[lQ8_0.QS : lQ8_0.QS+32] {
					s += int32(int8(q))
				}
				binary.LittleEndian.PutUint32(t[4:], uint32(-off*s))
			}
		}, func(n int) int {
			return sumTailBlock * lQ8_0.Blocks(n)
		}
}

// sumTailBlock is sumTail's bytes per block: float32 d_a, int32 −off·Σa.
const sumTailBlock = 4 + 4

// repackedOrder is Σ x·y for a 32-element type without a min (Q4_0,
// MXFP4) against Q8_0 activations in the order of llama.cpp's repacked
// kernels (ggml_gemv/gemm_q4_0_8x8_q8_0, ggml_gemv/gemm_mxfp4_8x8_q8_0;
// one lane per weight row): per block the exact int32 Σ q·a, then
// acc = fma(float(Σ), d_w·d_a, acc), blocks in order.
func repackedOrder(t tensor.DType) DotFunc {
	l, dec := quant.LayoutOf(t), quant.Decode32(t)
	return func(n int, x, y []byte) float32 {
		var acc float32
		var k quant.Block32
		for b := range l.Blocks(n) {
			k = dec(l.Block(x, b))
			a := lQ8_0.Block(y, b)
			s := int32(0)
			for e, q := range k.Q {
				s += q * int32(int8(a[lQ8_0.QS+e]))
			}
			acc = FMA32(float32(s), k.D*f16le(a[lQ8_0.D:]), acc)
		}
		return acc
	}
}

func putF32(b []byte, f float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(f)) }

// actBlock is the bytes of activations (the type's activation block plus
// its tail) the kernels read per block of blockCols columns.
func (f *packedFormat) actBlock(act tensor.DType) int {
	ab, _ := tensor.RowBytes(act, uint64(f.blockCols))
	return int(ab) + f.tailBytes(f.blockCols)
}

func (f *packedFormat) String() string {
	isa := f.isa
	if isa == "" {
		isa = "AVX-512 VNNI"
	}
	return fmt.Sprintf("packed %s ×%d (%s)", f.name, groupRows, isa)
}
