//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// madRows4x64 and madRows1x64 (madrows_amd64.s) add nj weighted rows into
// 4 (1) queries' first 64 accumulator elements; strides in bytes.
//
//go:noescape
func madRows4x64(nj int, w *float32, ws int, v *float32, vs int, acc *float32, as int)

//go:noescape
func madRows1x64(nj int, w *float32, ws int, v *float32, vs int, acc *float32, as int)

func init() {
	if !cpu.X86.HasAVX512F {
		return
	}
	madRowsOp.register("avx512", madRowsAVX512)
}

// madRowsAVX512 runs 64-element column chunks in registers, four queries
// at a time and then one; a column tail goes through MadF32's AVX-512
// kernel row by row (the same fused multiply-add per element).
func madRowsAVX512(acc []float32, as int, w []float32, ws int, v []float32, vs int, nq, nj, hd int) {
	h64 := hd &^ 63
	for c := 0; c < h64; c += 64 {
		q := 0
		for ; q+4 <= nq; q += 4 {
			madRows4x64(nj, &w[q*ws], 4*ws, &v[c], 4*vs, &acc[q*as+c], 4*as)
		}
		for ; q < nq; q++ {
			madRows1x64(nj, &w[q*ws], 4*ws, &v[c], 4*vs, &acc[q*as+c], 4*as)
		}
	}
	if h64 == hd {
		return
	}
	for q := range nq {
		a := acc[q*as+h64 : q*as+hd]
		for j := range nj {
			madF32AVX512(hd-h64, &a[0], &v[j*vs+h64], w[q*ws+j])
		}
	}
}
