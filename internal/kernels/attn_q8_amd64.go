//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// The kernels of attn_q8_amd64.s.

//go:noescape
func q8ColScores4(nb int, kd, kq *byte, q0, q1, q2, q3 *byte, o0, o1, o2, o3 *float32, shift int, mask uint16, pfd, pfq *byte)

//go:noescape
func madQ8_0x4x64(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool

//go:noescape
func madQ8_0x1x64(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool

//go:noescape
func madQ8_0x3x64(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool

//go:noescape
func madF16x3x64(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool

//go:noescape
func madF16x4x64(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool

//go:noescape
func madF16x1x64(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool

func init() {
	x := cpu.X86
	if x.HasAVX512F && x.HasF16C && x.HasFMA {
		madRowsF16Op.register("avx512", madRowsF16AVX512)
	}
	if !x.HasAVX512F || !x.HasAVX512VL || !x.HasAVX512VNNI || !x.HasAVX512BW || !x.HasAVX2 || !x.HasFMA || !x.HasF16C {
		return
	}
	scoresQ8_0Op.register("avx512vnni", scoresQ8_0AVX512)
	madRowsQ8_0Op.register("avx512vnni", madRowsQ8_0AVX512)
}

// scoresQ8_0AVX512 runs the four-query kernel over each 16-slot half of
// the block that [s0, s1) touches, a last group of fewer queries
// repeating its last query (the same scores written twice). Heads of more
// than eight groups take the reference (its scratch holds eight).
func scoresQ8_0AVX512(out []float32, ostride int, qa []byte, ab, nq int, k []byte, s0, s1, hd int, next []byte) {
	nb := hd / 32
	if nb > 8 {
		scoresQ8_0ColsGeneric(out, ostride, qa, ab, nq, k, s0, s1, hd, next)
		return
	}
	pf := k
	if len(next) >= nb*Q8ColGroup {
		pf = next // prefetched only
	}
	const half = Q8ColSlots / 2
	for h := s0 / half; h*half < s1; h++ {
		lo, hi := max(s0, h*half), min(s1, (h+1)*half)
		mask := uint16((1<<(hi-lo) - 1) << (lo - h*half))
		kd, kq := &k[2*h*half], &k[q8ColLanes+4*h*half]
		pfd, pfq := &pf[2*h*half], &pf[q8ColLanes+4*h*half]
		for i := 0; i < nq; i += 4 {
			g := min(nq-i, 4)
			qp := func(r int) *byte { return &qa[(i+min(r, g-1))*ab] }
			op := func(r int) *float32 { return &out[(i+min(r, g-1))*ostride] }
			q8ColScores4(nb, kd, kq, qp(0), qp(1), qp(2), qp(3), op(0), op(1), op(2), op(3), h*half-s0, mask, pfd, pfq)
		}
	}
}

// madKernel is one of the 64-column row kernels (madQ8_0x4x64 and kin).
type madKernel func(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool

// madRowChunks runs the 64-column chunks of a MadRows over stored rows,
// four queries at a time (x4), three left (x3), then one (x1); chunk is
// the bytes of 64 columns of a row. It returns the columns done (hd
// rounded down to 64); the caller adds the rest. A bad row offset panics,
// naming op.
func madRowChunks(op string, x4, x3, x1 madKernel, chunk int, acc []float32, as int, w []float32, ws int, v []byte, off []int32, nq, nj, hd int, next []int32) int {
	pf := &off[0]
	if len(next) >= nj {
		pf = &next[0]
	}
	h64 := hd &^ 63
	for c := 0; c < h64; c += 64 {
		vc := v[c/64*chunk:]
		mlen := (len(vc) - chunk) / 2
		ok := mlen >= 0
		q := 0
		for ; ok && q+4 <= nq; q += 4 {
			ok = x4(nj, &w[q*ws], 4*ws, &vc[0], &off[0], mlen, &acc[q*as+c], 4*as, pf)
		}
		if ok && nq-q == 3 {
			ok = x3(nj, &w[q*ws], 4*ws, &vc[0], &off[0], mlen, &acc[q*as+c], 4*as, pf)
			q += 3
		}
		for ; ok && q < nq; q++ {
			ok = x1(nj, &w[q*ws], 4*ws, &vc[0], &off[0], mlen, &acc[q*as+c], 4*as, pf)
		}
		if !ok {
			panic("kernels: " + op + ": a row offset outside the cache")
		}
	}
	return h64
}

// madRowsQ8_0AVX512 runs 64-column chunks (two blocks) in the kernels; a
// 32-column tail goes element by element.
func madRowsQ8_0AVX512(acc []float32, as int, w []float32, ws int, v []byte, off []int32, nq, nj, hd int, next []int32) {
	h64 := madRowChunks("MadRowsQ8_0", madQ8_0x4x64, madQ8_0x3x64, madQ8_0x1x64, 2*lQ8_0.Size, acc, as, w, ws, v, off, nq, nj, hd, next)
	if h64 == hd {
		return
	}
	// The last block: its own rows (offsets shifted by the chunk).
	rb := lQ8_0.Size
	base := h64 / 32 * rb
	for q := range nq {
		a := acc[q*as+h64 : q*as+hd]
		for j := range nj {
			row := v[2*int(off[j])+base : 2*int(off[j])+base+rb]
			x := w[q*ws+j]
			d := f16le(row[lQ8_0.D:])
			for e := range a {
				a[e] = FMA32(float32(int8(row[lQ8_0.QS+e]))*d, x, a[e])
			}
		}
	}
}

// madRowsF16AVX512 is madRowsQ8_0AVX512 for F16 rows: 64-column chunks
// in the kernels, a column tail element by element.
func madRowsF16AVX512(acc []float32, as int, w []float32, ws int, v []byte, off []int32, nq, nj, hd int, next []int32) {
	h64 := madRowChunks("MadRowsF16", madF16x4x64, madF16x3x64, madF16x1x64, 128, acc, as, w, ws, v, off, nq, nj, hd, next)
	if h64 == hd {
		return
	}
	for q := range nq {
		a := acc[q*as+h64 : q*as+hd]
		for j := range nj {
			row := v[2*int(off[j])+2*h64 : 2*int(off[j])+2*hd]
			x := w[q*ws+j]
			for e := range a {
				a[e] = FMA32(f16le(row[2*e:]), x, a[e])
			}
		}
	}
}
