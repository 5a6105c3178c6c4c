package kernels

import (
	"encoding/binary"

	"github.com/loom-inference/loom/internal/quant"
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
	for r := range groupRows {
		b := src[r*144 : r*144+144]
		dst[2*r], dst[2*r+1] = b[0], b[1]
		dst[32+2*r], dst[32+2*r+1] = b[2], b[3]
		for s := range 8 {
			sc, mn := quant.ScaleMinK4(s, b[4:16])
			dst[64+16*s+r] = sc
			dst[192+32*(s/2)+2*r+s%2] = mn
		}
		for j := range 4 {
			for l := range 8 {
				copy(dst[320+64*(8*j+l)+4*r:][:4], b[16+32*j+4*l:][:4])
			}
		}
	}
}

// q8KTail appends to a Q8_K activation row the per-sub-block sums q8s[s] =
// bsums[2s] + bsums[2s+1] (int16, ggml's hadd), 16 bytes per super-block:
// the mins term reads them as int16 pairs.
func q8KTail(row []byte, n int) {
	nb := n / 256
	tail := row[nb*292:]
	for b := range nb {
		bs := row[b*292+260 : b*292+292]
		for s := range 8 {
			v := int16(binary.LittleEndian.Uint16(bs[4*s:])) + int16(binary.LittleEndian.Uint16(bs[4*s+2:]))
			binary.LittleEndian.PutUint16(tail[16*b+2*s:], uint16(v))
		}
	}
}

func q8KTailBytes(n int) int { return 16 * (n / 256) }

// Packed Q6_K: per group of 16 rows and 256-column super-block (3616
// bytes, 210 per row-block as stored plus 16):
//
//	0    d      [16]f16
//	32   scales [16 sub-blocks][16 rows]int16   (int8 widened: VPDPWSSD pairs it with a zero word)
//	544  quants [2 j][8 l] × 192 bytes:
//	       +0   [16 rows][4]u8  ql[64j+4l .. +3]     (low nibbles chunk 4j, high 4j+2)
//	       +64  [16 rows][4]u8  ql[64j+32+4l .. +3]  (chunk 4j+1, 4j+3)
//	       +128 [16 rows][4]u8  qh[32j+4l .. +3]     (2 high bits per chunk)
//
// ggml's lane l of chunk ch = 4j+c is elements 32ch+4l..+3, scaled by
// scales[2ch + l/4].
const q6KGroupBlock = 3616

func packQ6_K(dst, src []byte) {
	for r := range groupRows {
		b := src[r*210 : r*210+210]
		dst[2*r], dst[2*r+1] = b[208], b[209]
		for s := range 16 {
			binary.LittleEndian.PutUint16(dst[32+32*s+2*r:], uint16(int16(int8(b[192+s]))))
		}
		for j := range 2 {
			for l := range 8 {
				o := 544 + 192*(8*j+l) + 4*r
				copy(dst[o:o+4], b[64*j+4*l:])
				copy(dst[o+64:o+68], b[64*j+32+4*l:])
				copy(dst[o+128:o+132], b[128+32*j+4*l:])
			}
		}
	}
}

// q6KTail appends to a Q8_K activation row, per super-block, the 64 int32
// corrections −32·Σ a[32ch+4l .. +3] (index 8ch+l), Q6_K's −32 offset.
func q6KTail(row []byte, n int) {
	nb := n / 256
	tail := row[nb*292:]
	for b := range nb {
		putLaneCorrections(tail[256*b:256*b+256], row[b*292+4:b*292+260], 32)
	}
}

func q6KTailBytes(n int) int { return 256 * (n / 256) }
