// Package kernels holds the hot loops of the forward pass. This file:
// out = x · Wᵀ for a weight matrix of any supported type, the operation of
// ggml_mul_mat on the CPU backend. Activations are first converted to the
// weight type's vec_dot type (Q8_0/Q8_1/Q8_K for quantized weights, the
// weight's own float type otherwise) exactly as ggml does, and then every
// output is one dot product; see internal/quant for the reference numbers.
package kernels

import (
	"fmt"

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Matrix is a 2-D weight in ggml layout: Rows rows of Cols elements each
// (ggml ne0 = Cols, ne1 = Rows), stored as blocks of Type.
type Matrix struct {
	Name       string
	Type       tensor.DType
	Rows, Cols int
	Data       []byte // [Rows][RowBytes]
	RowBytes   int
	ops        quant.Ops
	impl       Impl
	task       mmTask // reused by MatMul so a product allocates nothing
	actRow     int    // bytes of one activation row in the vec_dot type (plus a scale tail for Scaled impls)
}

// NewMatrix checks that data holds rows×cols elements of type t.
func NewMatrix(name string, t tensor.DType, rows, cols int, data []byte) (*Matrix, error) {
	ops, err := quant.For(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rb, err := tensor.RowBytes(t, uint64(cols))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ab, err := tensor.RowBytes(ops.ActType, uint64(cols))
	if err != nil {
		return nil, fmt.Errorf("%s: activations: %w", name, err)
	}
	if uint64(len(data)) != rb*uint64(rows) {
		return nil, fmt.Errorf("%s: %d bytes, want %d×%d %s = %d", name, len(data), rows, cols, t, rb*uint64(rows))
	}
	m := &Matrix{Name: name, Type: t, Rows: rows, Cols: cols, Data: data, RowBytes: int(rb), ops: ops, impl: best(t), actRow: int(ab)}
	if m.impl.Scaled {
		m.actRow += actTailBytes(cols)
	}
	return m, nil
}

// Row dequantizes row r into dst[:Cols].
func (m *Matrix) Row(dst []float32, r int) {
	m.ops.Dequant(dst[:m.Cols], m.Data[r*m.RowBytes:(r+1)*m.RowBytes])
}

// ActBytes is the scratch MatMul needs for n rows of activations.
func (m *Matrix) ActBytes(n int) int { return n * m.actRow }

// MatMul computes out[t][r] = Σ_c x[t][c]·W[r][c] for n tokens.
//
//	x   [n, Cols] float32
//	out [n, Rows] float32
//	act scratch of at least m.ActBytes(n) bytes
//
// Work is split over output rows; each worker walks its rows once and reuses
// every weight row for all n tokens while it is in cache (prefill reuse).
func MatMul(p *parallel.Pool, m *Matrix, x []float32, n int, out []float32, act []byte) {
	cols, rows := m.Cols, m.Rows
	act = act[:n*m.actRow]
	for t := 0; t < n; t++ {
		row := act[t*m.actRow : (t+1)*m.actRow]
		m.ops.QuantizeAct(row, x[t*cols:(t+1)*cols])
		if m.impl.Scaled {
			actTail(row, cols)
		}
	}
	m.task.m, m.task.dot, m.task.act, m.task.out, m.task.n = m, m.impl.Dot, act, out, n
	p.RunTask(rows, 16, &m.task)
}

// mmTask computes output rows [lo, hi) of one MatMul.
type mmTask struct {
	m   *Matrix
	dot DotFunc
	act []byte
	out []float32
	n   int
	// Per-worker results of the four-token kernel, a cache line each: two
	// workers writing one line would bounce it between cores every row.
	four [parallel.MaxThreads][16]float32
}

func (t *mmTask) Do(worker, lo, hi int) {
	m, rows := t.m, t.m.Rows
	d4 := m.impl.Dot4
	four := t.four[worker][:4]
	for r := lo; r < hi; r++ {
		w := m.Data[r*m.RowBytes : (r+1)*m.RowBytes]
		i := 0
		if d4 != nil {
			for ; i+4 <= t.n; i += 4 {
				d4(m.Cols, w, t.act[i*m.actRow:(i+4)*m.actRow], m.actRow, four[:])
				for k, v := range four {
					t.out[(i+k)*rows+r] = v
				}
			}
		}
		for ; i < t.n; i++ {
			t.out[i*rows+r] = t.dot(m.Cols, w, t.act[i*m.actRow:(i+1)*m.actRow])
		}
	}
}
