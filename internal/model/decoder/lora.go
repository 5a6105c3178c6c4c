package decoder

import (
	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/nn"
)

// loraGroup is a run of the ubatch's tokens [lo, hi) whose sequences apply
// the same adapters.
type loraGroup struct {
	lo, hi int
	set    []model.AdapterScale
}

// loraState is the runner's adapter scratch: the ubatch's groups and the
// two products' outputs.
type loraState struct {
	groups []loraGroup
	rows   []loraGroup // the head's groups (rowGroups)
	ax, bx []float32   // [n, rank], [n, out]
}

// rowGroups renumbers token groups for the rows of the wanted tokens
// (rows: their ubatch indices, ascending).
func (l *loraState) rowGroups(tok []loraGroup, rows []int) []loraGroup {
	g := l.rows[:0]
	k := 0
	for i, t := range rows {
		for k < len(tok) && tok[k].hi <= t {
			k++
		}
		if k == len(tok) || t < tok[k].lo {
			continue // no adapters
		}
		if n := len(g); n > 0 && g[n-1].hi == i && sameAdapters(g[n-1].set, tok[k].set) {
			g[n-1].hi = i + 1
		} else {
			g = append(g, loraGroup{i, i + 1, tok[k].set})
		}
	}
	l.rows = g
	return g
}

// groupAdapters records which adapters the tokens [lo, hi) of b apply
// (none: no groups, and products run as without adapters).
func (r *Runner) groupAdapters(b *model.Batch, lo, hi int) {
	g := r.s.lora.groups[:0]
	for i := lo; i < hi; {
		j := i + 1
		for j < hi && b.SeqOf(j) == b.SeqOf(i) {
			j++
		}
		if set := b.AdaptersOf(b.SeqOf(i)); len(set) > 0 {
			if n := len(g); n > 0 && g[n-1].hi == i-lo && sameAdapters(g[n-1].set, set) {
				g[n-1].hi = j - lo
			} else {
				g = append(g, loraGroup{i - lo, j - lo, set})
			}
		}
		i = j
	}
	r.s.lora.groups = g
}

func sameAdapters(a, b []model.AdapterScale) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// mm is the product out = m·x of n tokens plus, for the tokens whose
// sequences apply adapters to m, each adapter's s·B(A·x), as llama.cpp's
// build_lora_mm: the base product, then per adapter B(A·x) scaled and
// added.
//
//	x [n, m.Cols], out [n, m.Rows]
func (s *Step) mm(m *kernels.Matrix, x []float32, n int, out []float32) {
	s.r.s.ws.MatMul(s.r.pool, m, x, n, out)
	s.adapt(m, x, out)
}

// mmNext is mm after a product on prev of the same x (MatMulNext).
func (s *Step) mmNext(m, prev *kernels.Matrix, x []float32, n int, out []float32) {
	s.r.s.ws.MatMulNext(s.r.pool, m, prev, x, n, out)
	s.adapt(m, x, out)
}

// mms is mm of one input by up to three matrices (nil skipped), in one
// pass of the pool where the kernels allow (Workspace.MatMuls), then each
// one's adapters: a decode layer's Q, K and V, or gate and up.
func (s *Step) mms(ms [3]*kernels.Matrix, x []float32, n int, outs [3][]float32) {
	s.r.s.ws.MatMuls(s.r.pool, ms, x, n, outs)
	for i, m := range ms {
		if m != nil {
			s.adapt(m, x, outs[i])
		}
	}
}

// adapt adds the adapters' terms of m's product to out.
func (s *Step) adapt(m *kernels.Matrix, x, out []float32) {
	st := &s.r.s
	for _, g := range st.lora.groups {
		k := g.hi - g.lo
		xs := x[g.lo*m.Cols : g.hi*m.Cols]
		os := out[g.lo*m.Rows : g.hi*m.Rows]
		for _, a := range g.set {
			w := a.L.Weights[m.Name]
			if w == nil {
				continue
			}
			sc := w.Scale(a.L.Alpha, a.Scale)
			ax := grow(&st.lora.ax, k*w.A.Rows)
			bx := grow(&st.lora.bx, k*w.B.Rows)
			st.ws.MatMul(s.r.pool, w.A, xs, k, ax)
			st.ws.MatMul(s.r.pool, w.B, ax, k, bx)
			for i := range bx {
				bx[i] *= sc
			}
			nn.Add(os, bx)
		}
	}
}

// grow returns the first n values of *buf, growing it when needed (the
// adapter scratch reaches its size on the first batches).
func grow(buf *[]float32, n int) []float32 {
	if len(*buf) < n {
		*buf = make([]float32, n)
	}
	return (*buf)[:n]
}
