package kernels

import (
	"encoding/binary"

	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Packed Q4_K: per group of 16 rows and 256-column super-block (2368
// bytes, 144 per row-block as stored plus 4):
//
//	0    d    [16]f16
//	32   dmin [16]f16
//	64   scales [8 sub-blocks][16 rows]u8     (6-bit, unpacked)
//	192  mins   [4 pairs][16 rows][2]u8       (min 2m, min 2m+1 of each row)
//	320  qs     [4 j][8 l][16 rows][4]u8      (qs[32j+4l .. +3] of each row)
//
// In qs register (j, l), low nibbles are lane l of sub-block 2j (elements
// 64j+4l..+3) and high nibbles lane l of sub-block 2j+1: ggml's lanes.
const q4KGroupBlock = 2368

func packQ4_K(dst, src []byte) {
	l := &lQ4_K
	for r := range groupRows {
		b := l.Block(src, r)
		copy(dst[2*r:2*r+2], b[l.D:])
		copy(dst[32+2*r:32+2*r+2], b[l.M:])
		for s := range 8 {
			sc, mn := quant.ScaleMinK4(s, b[l.Scales:])
			dst[64+16*s+r] = sc
			dst[192+32*(s/2)+2*r+s%2] = mn
		}
		for j := range 4 {
			for i := range 8 {
				copy(dst[320+64*(8*j+i)+4*r:][:4], b[l.QS+32*j+4*i:][:4])
			}
		}
	}
}

// q8KTail appends to a Q8_K activation row the per-sub-block sums q8s[s] =
// bsums[2s] + bsums[2s+1] (int16, ggml's hadd), 16 bytes per super-block:
// the mins term reads them as int16 pairs.
func q8KTail(row []byte, n int) {
	nb := lQ8_K.Blocks(n)
	tail := row[nb*lQ8_K.Size:]
	for b := range nb {
		blk := lQ8_K.Block(row, b)
		for s := range 8 {
			v := int16(quant.Q8KBsum(blk, 2*s) + quant.Q8KBsum(blk, 2*s+1))
			binary.LittleEndian.PutUint16(tail[16*b+2*s:], uint16(v))
		}
	}
}

func q8KTailBytes(n int) int { return 16 * lQ8_K.Blocks(n) }

// Packed Q6_K: per group of 16 rows and 256-column super-block (3392
// bytes, 53 cache lines: 210 per row-block as stored plus 2):
//
//	0    d      [16]f16
//	32   (zero)
//	64   scales [16 sub-blocks][16 rows]int8
//	320  quants [2 j][8 l] × 192 bytes:
//	       +0   [16 rows][4]u8  A = q0 | (q3 & 3)<<6
//	       +64  [16 rows][4]u8  B = q1 | (q3>>2 & 3)<<6
//	       +128 [16 rows][4]u8  C = q2 | (q3>>4)<<6
//
// where qc (0..63) is element 4l..4l+3 of chunk 4j+c (ggml's lane l of
// chunk ch = 4j+c is elements 32ch+4l..+3, scaled by scales[2ch + l/4]):
// three chunks unpack with one AND each, the fourth from the top bits. The
// padding after d starts every quant vector on a cache line (the groups
// follow one another from a cache-line boundary).
const q6KGroupBlock = 3392

func packQ6_K(dst, src []byte) {
	l := &lQ6_K
	clear(dst[32:64])
	for r := range groupRows {
		b := l.Block(src, r)
		copy(dst[2*r:2*r+2], b[l.D:])
		for s := range 16 {
			dst[64+16*s+r] = b[l.Scales+s]
		}
		for j := range 2 {
			for i := range 32 {
				// ggml's four 6-bit values of element i of half j.
				lo, lo2, h := b[l.QS+64*j+i], b[l.QS+64*j+32+i], b[l.QH+32*j+i]
				q0 := lo&0xf | (h&3)<<4
				q1 := lo2&0xf | (h>>2&3)<<4
				q2 := lo>>4 | (h>>4&3)<<4
				q3 := lo2>>4 | (h>>6)<<4
				o := 320 + 192*(8*j+i/4) + 4*r + i%4
				dst[o] = q0 | (q3&3)<<6
				dst[o+64] = q1 | (q3>>2&3)<<6
				dst[o+128] = q2 | q3>>4<<6
			}
		}
	}
}

var (
	lQ4_K = quant.LayoutOf(tensor.Q4_K)
	lQ6_K = quant.LayoutOf(tensor.Q6_K)
)

// q6KTail appends to a Q8_K activation row, per super-block, the 64 int32
// corrections −32·Σ a[32ch+4l .. +3] (index 8ch+l), Q6_K's −32 offset.
func q6KTail(row []byte, n int) {
	nb := lQ8_K.Blocks(n)
	tail := row[nb*lQ8_K.Size:]
	for b := range nb {
		putLaneCorrections(tail[256*b:256*b+256], lQ8_K.Block(row, b)[lQ8_K.QS:lQ8_K.QS+256], 32)
	}
}

func q6KTailBytes(n int) int { return 256 * lQ8_K.Blocks(n) }
