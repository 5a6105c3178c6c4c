package kernels

import "github.com/loom-inference/loom/internal/parallel"

// Workspace is the per-call state of matrix products: the activations
// converted to the weights' vec_dot type, and the jobs handed to the
// thread pool. Weights (Matrix) are only read by a product, so any number
// of runners multiply by one model's matrices at once, each with its own
// Workspace, as gemma.cpp passes its activations per call. A Workspace
// serves one product at a time (it belongs to one runner). Its zero value
// is ready to use; it grows on demand and is reused, so once it has
// reached its size (Reserve sizes it up front) a product allocates nothing.
type Workspace struct {
	// act holds n activation rows of m.actRow bytes each, in the vec_dot
	// type (plus the packed kernels' tail), or the float GEMM's inputs
	// (floatInput).
	act []byte
	// conv is the matrix whose input conversion act holds, for convN
	// tokens: MatMulNext reuses it only after a product on that matrix.
	conv  *Matrix
	convN int
	// narrow holds act's one token narrowed for a four-row kernel
	// (Impl.Narrow) when narrowed is set; MatMul clears it.
	narrow   []byte
	narrowed bool

	// OneTokenOrder makes every product sum each token's dot products in
	// the order a one-token product uses (ggml's vec_dot), whatever the
	// number of tokens: no float GEMM, no batch-order row kernel.
	// Speculative verification sets it so k+1 rows equal k+1 one-token
	// decodes' on float weights too (quantized weights' kernels already
	// agree for any number of tokens).
	OneTokenOrder bool
	// BatchOrder makes a product of one token sum in the order a product
	// of several takes (the float GEMM's, a batch-order row kernel's): a
	// ubatch narrowed to the one token that wants logits
	// (decoder.Step.KeepWanted) keeps the order its whole ubatch had.
	// OneTokenOrder wins over it.
	BatchOrder bool

	quant quantTask // converts the activations, one token per job
	rows  mmTask    // dot products by weight row or packed group
	multi multiTask // MatMuls' products in one pass
	gemm  gemmTask  // the float GEMM's row tiles (gemm_float.go)
	// tiles: each worker's scratch in the float GEMM (its packed weight
	// tile grows on its first use).
	tiles [parallel.MaxThreads]tileScratch
}

// Reserve sizes the activation scratch for products of up to n tokens by
// any of ms, so the first forward pass does not grow it matrix by matrix.
func (w *Workspace) Reserve(n int, ms []*Matrix) {
	need, narrow := 0, 0
	for _, m := range ms {
		need = max(need, m.ActBytes(n))
		if m.plan(1).rows.Narrow != nil {
			narrow = max(narrow, 2*m.Cols)
		}
	}
	w.scratch(need)
	if len(w.narrow) < narrow {
		w.narrow = make([]byte, narrow)
	}
}

// scratch returns the first size bytes of act, growing it if needed.
func (w *Workspace) scratch(size int) []byte {
	if len(w.act) < size {
		w.act = make([]byte, size)
	}
	return w.act[:size]
}

// MatMul computes out[t][r] = Σ_c x[t][c]·W[r][c] for n tokens.
//
//	x   [n, m.Cols] float32
//	out [n, m.Rows] float32
//
// Work is split over output rows; each worker walks its rows once and reuses
// every weight row for all n tokens while it is in cache (prefill reuse).
func (w *Workspace) MatMul(p *parallel.Pool, m *Matrix, x []float32, n int, out []float32) {
	w.conv, w.convN, w.narrowed = m, n, false
	pl := w.plan(m, n)
	if pl.gemm != nil {
		act, ldb := w.floatInput(p, m, pl.gemm, x, n, true)
		w.matMulFloat(p, m, pl.gemm, act, ldb, n, out)
		return
	}
	w.product(p, m, pl, w.quantize(p, m, x, n), n, out)
}

// quantize converts n tokens of x into m's activation layout, in the
// workspace's scratch, one token per job.
func (w *Workspace) quantize(p *parallel.Pool, m *Matrix, x []float32, n int) []byte {
	act := w.scratch(n * m.actRow)
	w.quant = quantTask{m: m, x: x[:n*m.Cols], act: act}
	p.RunTask(n, 1, &w.quant)
	return act
}

// MatMulNext is MatMul for a product with the same input x as the MatMul
// (or MatMulNext) on prev that this workspace ran last: when both matrices
// take activations in the same layout, x is not converted again (Q, K and
// V share one conversion, as do the FFN's gate and up). Otherwise it is a
// plain MatMul.
func (w *Workspace) MatMulNext(p *parallel.Pool, m, prev *Matrix, x []float32, n int, out []float32) {
	pl := w.plan(m, n)
	if prev == nil || prev != w.conv || n != w.convN || !m.sameInput(prev) || (w.plan(prev, n).gemm != nil) != (pl.gemm != nil) {
		w.MatMul(p, m, x, n, out)
		return
	}
	w.conv = m
	if pl.gemm != nil {
		w.narrowed = false
		act, ldb := w.floatInput(p, m, pl.gemm, x, n, false)
		w.matMulFloat(p, m, pl.gemm, act, ldb, n, out)
		return
	}
	w.product(p, m, pl, w.act[:n*m.actRow], n, out)
}

// MatMuls computes outs[i] = x·ms[i]ᵀ (as MatMul) for one input x and up
// to three matrices (Q, K and V; gate and up; nil entries skipped), bit
// for bit as MatMul on the first and MatMulNext on each next. When the
// products are one-token products on packed groups that read one
// conversion, all their groups run in one pass of the pool: a decode
// layer then waits for its slowest worker once instead of once per
// matrix (at two threads each wait is the difference between two halves
// of a product streamed from memory).
//
//	x       [n, Cols] float32
//	outs[i] [n, ms[i].Rows] float32
func (w *Workspace) MatMuls(p *parallel.Pool, ms [3]*Matrix, x []float32, n int, outs [3][]float32) {
	if !w.oneProduct(ms, n) {
		var prev *Matrix
		for i, m := range ms {
			if m == nil {
				continue
			}
			if prev == nil {
				w.MatMul(p, m, x, n, outs[i])
			} else {
				w.MatMulNext(p, m, prev, x, n, outs[i])
			}
			prev = m
		}
		return
	}
	var first, last *Matrix
	t := &w.multi
	items := 0
	for i, m := range ms {
		t.off[i], t.items[i] = items, 0
		if m == nil {
			continue
		}
		if first == nil {
			first = m
		}
		last = m
		pt := &t.parts[i]
		pt.m, pt.impl, pt.out, pt.n, pt.y4 = m, w.plan(m, n).rows, outs[i][:n*m.Rows], n, nil
		pt.oneThread = p.Threads() == 1
		pt.groups = m.Rows / groupRows
		t.items[i] = pt.groups + m.Rows%groupRows
		items += t.items[i]
	}
	act := w.quantize(p, first, x, n)
	for i := range t.parts {
		t.parts[i].act = act
	}
	p.RunTask(items, 1, t)
	w.conv, w.convN, w.narrowed = last, n, false
}

// oneProduct reports whether MatMuls runs ms as one pass: one token, at
// least two matrices, every one on packed groups reading the first one's
// conversion.
func (w *Workspace) oneProduct(ms [3]*Matrix, n int) bool {
	var first *Matrix
	count := 0
	for _, m := range ms {
		if m == nil {
			continue
		}
		if first == nil {
			first = m
		}
		if w.plan(m, n).packed == nil || !m.sameInput(first) {
			return false
		}
		count++
	}
	return n == 1 && count >= 2
}

// multiTask is MatMuls' pass: item j of part i is item j − off[i] of
// that matrix's product (its packed groups, then its rows past them).
type multiTask struct {
	parts [3]mmTask
	off   [3]int
	items [3]int
}

func (t *multiTask) Do(worker, lo, hi int) {
	for i := range t.parts {
		a, b := max(lo, t.off[i]), min(hi, t.off[i]+t.items[i])
		if a < b {
			t.parts[i].Do(worker, a-t.off[i], b-t.off[i])
		}
	}
}

// plan is m's plan for n tokens, in one-token order when OneTokenOrder,
// in the batch order when BatchOrder.
func (w *Workspace) plan(m *Matrix, n int) plan {
	switch {
	case w.OneTokenOrder:
		return m.plan(1)
	case w.BatchOrder:
		return m.plan(max(n, 2))
	}
	return m.plan(n)
}

// product runs the dot products on converted activations.
func (w *Workspace) product(p *parallel.Pool, m *Matrix, pl plan, act []byte, n int, out []float32) {
	rows := m.Rows
	t := &w.rows
	t.m, t.impl, t.act, t.out, t.n, t.y4 = m, pl.rows, act, out, n, nil
	t.oneThread = p.Threads() == 1
	if pl.packed != nil {
		// Items: the packed groups, then the leftover rows one by one.
		groups := rows / groupRows
		t.groups = groups
		p.RunTask(groups+rows%groupRows, 1, t)
		return
	}
	t.groups = 0
	if n == 1 && pl.rows.Rows4 != nil {
		t.y4 = act[:m.actRow]
		if nw := pl.rows.Narrow; nw != nil {
			// One conversion per input row, shared by its products (Q, K
			// and V; gate and up) and read by every worker.
			if len(w.narrow) < 2*m.Cols {
				w.narrow = make([]byte, 2*m.Cols)
			}
			if !w.narrowed {
				nw(w.narrow, act, m.Cols)
				w.narrowed = true
			}
			t.y4 = w.narrow[:2*m.Cols]
		}
	}
	p.RunTask(rows, 16, t)
}
