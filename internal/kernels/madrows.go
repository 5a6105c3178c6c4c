package kernels

// MadRows is the value side of tiled attention: for nq queries and nj
// value rows,
//
//	acc[q·as : q·as+hd] += Σ_j w[q·ws + j] · v[j·vs : j·vs+hd]
//
// in j order, each term one fused multiply-add per element: per element
// the same operations, in the same order, as nj MadF32 calls a query at a
// time, so the result is those calls' bits. The SIMD versions keep a
// block of queries' accumulators in registers across the rows (each value
// row loaded once per block) instead of reloading and storing them per
// row.
//
//	acc [nq, as] (hd used)   w [nq, ws] (nj used)   v [nj, vs] (hd used)
func MadRows(acc []float32, as int, w []float32, ws int, v []float32, vs int, nq, nj, hd int) {
	if nq <= 0 || nj <= 0 || hd <= 0 {
		return
	}
	_ = acc[(nq-1)*as+hd-1]
	_ = w[(nq-1)*ws+nj-1]
	_ = v[(nj-1)*vs+hd-1]
	madRowsOp.run(acc, as, w, ws, v, vs, nq, nj, hd)
}

var madRowsOp = newOp("MadRows", madRowsGeneric)

// madRowsGeneric is the order reference: MadF32's reference, query by
// query, row by row.
func madRowsGeneric(acc []float32, as int, w []float32, ws int, v []float32, vs int, nq, nj, hd int) {
	for q := range nq {
		a := acc[q*as : q*as+hd]
		for j := range nj {
			madF32Generic(a, v[j*vs:j*vs+hd], w[q*ws+j])
		}
	}
}
