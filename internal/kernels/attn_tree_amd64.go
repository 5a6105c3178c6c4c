//go:build amd64 && !purego

package kernels

// The scores kernels of attn_tree_amd64.s (gen_attn_tree.go):
// scoresTreeAVX512M<M>Q<NQ> scores NQ queries of 64·M elements against
// 16·npass positions in ggml_vec_dot_f16's order (one token), its 64-lane
// fold evaluated as a tree with positions as the vector lanes;
// scoresTreeGemmAVX512M<M>Q<NQ> likewise in tinyBLAS's (16 lanes).
type treeKernel func(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeAVX512M1Q1(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeAVX512M1Q2(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeAVX512M1Q3(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeAVX512M1Q4(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeAVX512M2Q1(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeAVX512M2Q2(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeAVX512M2Q3(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeAVX512M2Q4(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeAVX512M4Q1(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeAVX512M4Q2(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeAVX512M4Q3(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeAVX512M4Q4(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeGemmAVX512M1Q1(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeGemmAVX512M1Q2(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeGemmAVX512M1Q3(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeGemmAVX512M1Q4(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeGemmAVX512M2Q1(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeGemmAVX512M2Q2(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeGemmAVX512M2Q3(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeGemmAVX512M2Q4(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeGemmAVX512M4Q1(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeGemmAVX512M4Q2(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeGemmAVX512M4Q3(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

//go:noescape
func scoresTreeGemmAVX512M4Q4(q *float32, qstride int, k *uint16, klim int, off *int32, npass int, out *float32, ostride int, pf *uint16) bool

// treeAVX512 is indexed [M][NQ−1] (M = hd/64: 1, 2 or 4).
var treeAVX512 = [5][4]treeKernel{
	1: {scoresTreeAVX512M1Q1, scoresTreeAVX512M1Q2, scoresTreeAVX512M1Q3, scoresTreeAVX512M1Q4},
	2: {scoresTreeAVX512M2Q1, scoresTreeAVX512M2Q2, scoresTreeAVX512M2Q3, scoresTreeAVX512M2Q4},
	4: {scoresTreeAVX512M4Q1, scoresTreeAVX512M4Q2, scoresTreeAVX512M4Q3, scoresTreeAVX512M4Q4},
}

// treeGemmAVX512 is treeAVX512 in OrderGemm (16 lanes).
var treeGemmAVX512 = [5][4]treeKernel{
	1: {scoresTreeGemmAVX512M1Q1, scoresTreeGemmAVX512M1Q2, scoresTreeGemmAVX512M1Q3, scoresTreeGemmAVX512M1Q4},
	2: {scoresTreeGemmAVX512M2Q1, scoresTreeGemmAVX512M2Q2, scoresTreeGemmAVX512M2Q3, scoresTreeGemmAVX512M2Q4},
	4: {scoresTreeGemmAVX512M4Q1, scoresTreeGemmAVX512M4Q2, scoresTreeGemmAVX512M4Q3, scoresTreeGemmAVX512M4Q4},
}

// scoresTree runs the tree kernels over the first nc positions (a multiple
// of 16, nc ≤ len(kT)) for nq queries in groups of up to four, reporting
// false if there are none for hd or an offset was out of range.
func scoresTree(tk *[5][4]treeKernel, out []float32, outStride, nc int, q []float32, qStride, hd, nq int, kT []uint16, off []int32, next []uint16) bool {
	m := hd / 64
	if hd%64 != 0 || m >= len(tk) || tk[m][0] == nil {
		return false
	}
	pf := &kT[0]
	if len(next) > 0 {
		pf = &next[0] // prefetched only: any address would do
	}
	for i := 0; i < nq; {
		g := min(nq-i, 4)
		if !tk[m][g-1](&q[i*qStride], qStride, &kT[0], len(kT)-16, &off[0], nc/16, &out[i*outStride], outStride, pf) {
			return false
		}
		i += g
	}
	return true
}
