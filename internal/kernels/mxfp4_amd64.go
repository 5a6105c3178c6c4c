//go:build amd64 && !purego

package kernels

import (
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

// The MXFP4 kernels (mxfp4_amd64.s) read these tables, built from
// internal/quant's so the codebook and the scales are written down once.
var (
	// mxfp4Scales[e] = 2^(e−128): ggml's ggml_table_f32_e8m0_half.
	mxfp4Scales = func() (t [256]float32) {
		for e := range t {
			t[e] = quant.E8M0Half(byte(e))
		}
		return t
	}()
	// mxfp4Codes is the codebook as signed bytes (a VPSHUFB table);
	// mxfp4CodesBiased the same plus mxfp4Bias, unsigned for VPDPBUSD.
	mxfp4Codes, mxfp4CodesBiased = func() (c, u [16]byte) {
		for q := range c {
			v := quant.MXFP4Value(byte(q))
			c[q], u[q] = byte(v), byte(v+mxfp4Bias)
		}
		return c, u
	}()
)

// mxfp4Bias is the largest code magnitude: code + mxfp4Bias is never
// negative, and the activation tail subtracts mxfp4Bias·Σa back (sumTail).
const mxfp4Bias = 12

//go:noescape
func dotMXFP4AVX2(nb int, x, y *byte) float32

//go:noescape
func gemvMXFP4r16(nb int, w, a *byte, out *float32)

//go:noescape
func gemmMXFP4r16x4(nb int, w, a *byte, astride int, out *float32, ostride int)

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C {
		register(tensor.MXFP4, "avx2", blockDot(tensor.MXFP4, dotMXFP4AVX2))
	}
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI {
		tail, tailBytes := sumTailFast(mxfp4Bias)
		registerKernels(tensor.MXFP4, true, &packedFormat{name: "mxfp4 repack", blockCols: lMXFP4.Elems, groupBlock: mxfp4GroupBlock,
			pack: packMXFP4, tail: tail, tailBytes: tailBytes, rest: table[tensor.MXFP4].repack.ref}, gemvMXFP4r16, nil, gemmMXFP4r16x4)
	}
}
