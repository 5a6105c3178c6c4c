//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

//go:noescape
func chainF16AVX512(w, lim, tail, ncol int, a *float32, v *uint16, vstride int, out *float32)

//go:noescape
func chainF16AVX2(w, lim, tail, ncol int, a *float32, v *uint16, vstride int, out *float32)

// attnImpl is one SIMD implementation of ScoresF16 and MixF16, built on a
// lane-chain kernel that handles cols columns per block.
type attnImpl struct {
	name   string
	scores func(out, q []float32, kT []uint16, stride int, o AttnOrder)
	mix    func(out, p []float32, v []uint16, stride, nkv int, o AttnOrder)
}

// attnImpls lists the implementations this CPU runs, fastest last.
var attnImpls []attnImpl

func newAttnImpl(name string, cols int, chain func(w, lim, tail, ncol int, a *float32, v *uint16, vstride int, out *float32)) attnImpl {
	return attnImpl{
		name: name,
		scores: func(out, q []float32, kT []uint16, stride int, o AttnOrder) {
			hd, n := len(q), len(out)
			nc := n / cols * cols
			if nc > 0 && hd > 0 {
				w, lim := 16, hd
				if o == OrderVecDot {
					w, lim = 64, hd&^63
				}
				_ = kT[(hd-1)*stride+nc-1] // every element read is inside kT
				chain(w, lim, hd, nc, &q[0], &kT[0], stride, &out[0])
			}
			scoresF16Generic(out[nc:], q, kT[min(nc, len(kT)):], stride, o)
		},
		mix: func(out, p []float32, v []uint16, stride, nkv int, o AttnOrder) {
			hd, nk := len(out), len(p)
			nc := hd / cols * cols
			if nc > 0 && nk > 0 {
				w, np := 64, nkv&^63
				if o == OrderGemm {
					w, np = 16, nkv
				}
				_ = v[(nk-1)*stride+nc-1]
				chain(w, min(nk, np), nk, nc, &p[0], &v[0], stride, &out[0])
			}
			mixF16Generic(out[nc:], p, v[min(nc, len(v)):], stride, nkv, o)
		},
	}
}

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C {
		attnImpls = append(attnImpls, newAttnImpl("avx2", 8, chainF16AVX2))
	}
	if hasExpAVX512 {
		attnImpls = append(attnImpls, newAttnImpl("avx512", 16, chainF16AVX512))
	}
	if len(attnImpls) > 0 {
		best := attnImpls[len(attnImpls)-1]
		ScoresF16, MixF16 = best.scores, best.mix
	}
}
