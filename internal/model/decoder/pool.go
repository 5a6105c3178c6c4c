package decoder

import (
	"cmp"
	"fmt"
	"math"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/libm"
	"github.com/loom-inference/loom/internal/model"
)

// PoolHead is what an embedding or reranking model applies after pooling,
// as llama.cpp's build_pooling and build_dense_out do: for rank pooling a
// classification head — tanh(Cls·x + ClsB), then ClsOut·x + ClsOutB, then
// a softmax over the labels for Qwen3's rankers — and for every pooling
// the sentence-transformers dense projections Dense2 (+ Dense2B) and
// Dense3 (EmbeddingGemma).
type PoolHead struct {
	Cls     *kernels.Matrix // [dim, dim] (cls.weight; nil: none)
	ClsB    []float32       // [dim]
	ClsOut  *kernels.Matrix // [nClsOut, dim] (cls.output.weight)
	ClsOutB []float32       // [nClsOut]
	Softmax bool            // a softmax over the rank head's outputs (Qwen3)
	Dense2  *kernels.Matrix // [d2, dim] (dense_2.weight)
	Dense2B []float32       // [d2]
	Dense3  *kernels.Matrix // [dim, d2] (dense_3.weight)
}

// BindPoolHead binds the pooling head's optional weights; a ranking model
// (pooling rank) must have cls.output.
func BindPoolHead(b *model.Binder, c *model.Config) PoolHead {
	var h PoolHead
	if !c.Embedding() {
		return h
	}
	if c.Pooling == model.PoolRank {
		h.Cls = b.OptMatrix("cls.weight", c.Dim, c.Dim)
		if h.Cls != nil {
			h.ClsB = b.OptVector("cls.bias", c.Dim)
		}
		if !b.Has("cls.output.weight") {
			b.Err = cmp.Or(b.Err, fmt.Errorf("model: pooling rank needs a classification head, and there is no cls.output.weight (not a reranker)"))
			return h
		}
		h.ClsOut = b.Matrix("cls.output.weight", c.NClsOut, c.Dim)
		h.ClsOutB = b.OptVector("cls.output.bias", c.NClsOut)
		h.Softmax = c.Arch == "qwen3"
	}
	if t, ok := b.Src.Tensor("dense_2.weight"); ok && len(t.Dims) == 2 {
		d2 := int(min(t.Dims[1], model.MaxWidth+1))
		if d2 > model.MaxWidth {
			b.Err = cmp.Or(b.Err, fmt.Errorf("model: dense_2.weight has %d rows (limit %d)", t.Dims[1], model.MaxWidth))
			return h
		}
		h.Dense2 = b.Matrix("dense_2.weight", d2, c.Dim)
		h.Dense2B = b.OptVector("dense_2.bias", d2)
		h.Dense3 = b.OptMatrix("dense_3.weight", c.Dim, d2)
	} else if ok || b.Has("dense_3.weight") {
		b.Err = cmp.Or(b.Err, fmt.Errorf("model: dense_3.weight without a 2-D dense_2.weight"))
	}
	return h
}

func (h *PoolHead) matrices(ms []*kernels.Matrix) []*kernels.Matrix {
	return appendSet(ms, h.Cls, h.ClsOut, h.Dense2, h.Dense3)
}

// Pool implements model.Runner: it pools one sequence's hidden rows
// (hidden [n, dim], what a Batch with Hidden set wrote for it: every
// position for mean pooling, the first or last one for the others) into
// out [PooledDim].
func (r *Runner) Pool(hidden []float32, n int, out []float32) error {
	c := r.cfg
	dim := c.Dim
	if n <= 0 || len(hidden) < n*dim || len(out) < c.PooledDim() {
		return fmt.Errorf("%s: pooling %d rows of %d values (%d given) into %d (want %d)", c.Arch, n, dim, len(hidden), len(out), c.PooledDim())
	}
	h := r.net.PoolHead()
	bufs := [2][]float32{r.s.poolA, r.s.poolB}
	cur := 0 // x is bufs[cur]; a product writes the other one
	x := bufs[cur][:dim]
	mul := func(m *kernels.Matrix, bias []float32) {
		cur ^= 1
		y := bufs[cur][:m.Rows]
		r.s.ws.MatMul(r.pool, m, x, 1, y)
		if bias != nil {
			for i := range y {
				y[i] += bias[i]
			}
		}
		x = y
	}
	switch c.Pooling {
	case model.PoolMean:
		// llama.cpp: mul_mat(inpᵀ, mean) with mean = 1/n per token, a
		// float32 dot over the tokens for each dimension.
		inv := 1 / float32(n)
		for d := range dim {
			var s float32
			for t := range n {
				s += hidden[t*dim+d] * inv
			}
			x[d] = s
		}
	default: // one row: CLS, last, rank
		copy(x, hidden[:dim])
	}
	if c.Pooling == model.PoolRank {
		if h.Cls != nil {
			mul(h.Cls, h.ClsB)
			for i, v := range x {
				x[i] = float32(math.Tanh(float64(v)))
			}
		}
		mul(h.ClsOut, h.ClsOutB)
		if h.Softmax {
			softmaxRow(x)
		}
	}
	if h.Dense2 != nil {
		mul(h.Dense2, h.Dense2B)
		if h.Dense3 != nil {
			mul(h.Dense3, nil)
		}
	}
	copy(out, x[:c.PooledDim()])
	return nil
}

// softmaxRow is ggml_soft_max of one row: max, e^(x−max) with expf, their
// sum in double, then a multiply by 1/sum.
func softmaxRow(x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range x {
		x[i] = libm.Expf(v - mx)
		sum += float64(x[i])
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}
