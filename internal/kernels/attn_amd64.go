//go:build amd64 && !purego

package kernels

//go:noescape
func chainF16AVX512(w, lim, tail, ncol int, a *float32, v *uint16, vstride int, out *float32)

func init() {
	if !hasExpAVX512 {
		return
	}
	ScoresF16 = func(out, q []float32, kT []uint16, stride int, o AttnOrder) {
		hd, n := len(q), len(out)
		n16 := n &^ 15
		if n16 > 0 && hd > 0 {
			w, lim := 16, hd
			if o == OrderVecDot {
				w, lim = 64, hd&^63
			}
			_ = kT[(hd-1)*stride+n16-1] // every element read is inside kT
			chainF16AVX512(w, lim, hd, n16, &q[0], &kT[0], stride, &out[0])
		}
		scoresF16Generic(out[n16:], q, kT[min(n16, len(kT)):], stride, o)
	}
	MixF16 = func(out, p []float32, v []uint16, stride, nkv int, o AttnOrder) {
		hd, nk := len(out), len(p)
		d16 := hd &^ 15
		if d16 > 0 && nk > 0 {
			w, np := 64, nkv&^63
			if o == OrderGemm {
				w, np = 16, nkv
			}
			_ = v[(nk-1)*stride+d16-1]
			chainF16AVX512(w, min(nk, np), nk, d16, &p[0], &v[0], stride, &out[0])
		}
		mixF16Generic(out[d16:], p, v[min(d16, len(v)):], stride, nkv, o)
	}
}
