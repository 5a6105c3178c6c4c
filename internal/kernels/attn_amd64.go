//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

//go:noescape
func chainF16AVX512(w, lim, tail, ncol int, a *float32, v *uint16, off *int32, out *float32)

//go:noescape
func chainF16AVX2(w, lim, tail, ncol int, a *float32, v *uint16, off *int32, out *float32)

// attnImpl is one SIMD implementation of ScoresF16 and MixF16, built on a
// lane-chain kernel that handles cols columns per block.
type attnImpl struct {
	name   string
	scores func(out, q []float32, kT []uint16, off []int32, o AttnOrder)
	mix    func(out, p []float32, v []uint16, off []int32, nkv int, o AttnOrder)
}

func registerAttn(a attnImpl) {
	scoresF16.register(a.name, a.scores)
	mixF16.register(a.name, a.mix)
}

// rowsInside reports whether every row off[j] (j < len(off)) has cols
// elements inside v: the assembly reads without bounds checks.
func rowsInside(v []uint16, off []int32, cols int) bool {
	lo, hi := int32(0), int32(0)
	for _, o := range off {
		lo, hi = min(lo, o), max(hi, o)
	}
	return lo >= 0 && int(hi)+cols <= len(v)
}

func newAttnImpl(name string, cols int, chain func(w, lim, tail, ncol int, a *float32, v *uint16, off *int32, out *float32)) attnImpl {
	return attnImpl{
		name: name,
		scores: func(out, q []float32, kT []uint16, off []int32, o AttnOrder) {
			hd, n := len(q), len(out)
			off = off[:hd]
			nc := n / cols * cols
			if nc > 0 && hd > 0 && rowsInside(kT, off, nc) {
				w, lim := 16, hd
				if o == OrderVecDot {
					w, lim = 64, hd&^63
				}
				chain(w, lim, hd, nc, &q[0], &kT[0], &off[0], &out[0])
			} else {
				nc = 0
			}
			if nc < n {
				scoresF16Generic(out[nc:], q, kT[nc:], off, o)
			}
		},
		mix: func(out, p []float32, v []uint16, off []int32, nkv int, o AttnOrder) {
			hd, nk := len(out), len(p)
			off = off[:nk]
			nc := hd / cols * cols
			if nc > 0 && nk > 0 && rowsInside(v, off, nc) {
				w, np := 64, nkv&^63
				if o == OrderGemm {
					w, np = 16, nkv
				}
				chain(w, min(nk, np), nk, nc, &p[0], &v[0], &off[0], &out[0])
			} else {
				nc = 0
			}
			if nc < hd {
				mixF16Generic(out[nc:], p, v[nc:], off, nkv, o)
			}
		},
	}
}

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C {
		registerAttn(newAttnImpl("avx2", 8, chainF16AVX2))
	}
	if hasExpAVX512 {
		registerAttn(newAttnImpl("avx512", 16, chainF16AVX512))
	}
}
