package model

import (
	"fmt"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/quant"
)

// Binder fetches weights from a Source with shape checks, recording the
// first error so a builder can bind every tensor and check once.
type Binder struct {
	Src Source
	Err error
}

func (b *Binder) fail(format string, args ...any) {
	if b.Err == nil {
		b.Err = fmt.Errorf(format, args...)
	}
}

// Matrix binds a 2-D weight with rows of cols elements (ggml [cols, rows]).
func (b *Binder) Matrix(name string, rows, cols int) *kernels.Matrix {
	t, ok := b.Src.Tensor(name)
	if !ok {
		b.fail("model: missing tensor %q", name)
		return nil
	}
	if len(t.Dims) != 2 || t.Dims[0] != uint64(cols) || t.Dims[1] != uint64(rows) {
		b.fail("model: tensor %q has shape %v, want [%d %d]", name, t.Dims, cols, rows)
		return nil
	}
	m, err := kernels.NewMatrix(name, t.Type, rows, cols, t.Data)
	if err != nil {
		b.fail("model: %w", err)
	}
	return m
}

// RowMatrix binds a 1-D weight of cols elements as a matrix of one row,
// for a product that is a dot with each token's row (llama.cpp multiplies
// such a vector as a [cols, 1] matrix).
func (b *Binder) RowMatrix(name string, cols int) *kernels.Matrix {
	t, ok := b.Src.Tensor(name)
	if !ok {
		b.fail("model: missing tensor %q", name)
		return nil
	}
	if len(t.Dims) == 2 && t.Dims[1] == 1 {
		return b.Matrix(name, 1, cols)
	}
	if len(t.Dims) != 1 || t.Dims[0] != uint64(cols) {
		b.fail("model: tensor %q has shape %v, want [%d]", name, t.Dims, cols)
		return nil
	}
	m, err := kernels.NewMatrix(name, t.Type, 1, cols, t.Data)
	if err != nil {
		b.fail("model: %w", err)
	}
	return m
}

// OptMatrix is Matrix for a weight that may be absent (nil, no error).
func (b *Binder) OptMatrix(name string, rows, cols int) *kernels.Matrix {
	if _, ok := b.Src.Tensor(name); !ok {
		return nil
	}
	return b.Matrix(name, rows, cols)
}

// Vector binds a 1-D weight of n elements, converted to float32.
func (b *Binder) Vector(name string, n int) []float32 {
	t, ok := b.Src.Tensor(name)
	if !ok {
		b.fail("model: missing tensor %q", name)
		return nil
	}
	if len(t.Dims) != 1 || t.Dims[0] != uint64(n) {
		b.fail("model: tensor %q has shape %v, want [%d]", name, t.Dims, n)
		return nil
	}
	v := make([]float32, n)
	if err := quant.Dequantize(t.Type, v, t.Data); err != nil {
		b.fail("model: tensor %q: %w", name, err)
	}
	return v
}

// Rows binds a 2-D weight of n rows of cols elements (ggml [cols, n]),
// converted to float32, as one slice per row (per-expert biases).
func (b *Binder) Rows(name string, n, cols int) [][]float32 {
	v := b.Table(name, n, cols)
	if v == nil {
		return nil
	}
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = v[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return rows
}

// Table binds a 2-D tensor of shape [cols, n] (GGUF order) as n rows of
// cols values, one flat slice, dequantized.
func (b *Binder) Table(name string, n, cols int) []float32 {
	t, ok := b.Src.Tensor(name)
	if !ok {
		b.fail("model: missing tensor %q", name)
		return nil
	}
	if len(t.Dims) != 2 || t.Dims[0] != uint64(cols) || t.Dims[1] != uint64(n) {
		b.fail("model: tensor %q has shape %v, want [%d %d]", name, t.Dims, cols, n)
		return nil
	}
	v := make([]float32, n*cols)
	if err := quant.Dequantize(t.Type, v, t.Data); err != nil {
		b.fail("model: tensor %q: %w", name, err)
		return nil
	}
	return v
}

// OptVector is Vector for a weight that may be absent.
func (b *Binder) OptVector(name string, n int) []float32 {
	if _, ok := b.Src.Tensor(name); !ok {
		return nil
	}
	return b.Vector(name, n)
}

// Has reports whether the source holds a tensor.
func (b *Binder) Has(name string) bool { _, ok := b.Src.Tensor(name); return ok }

// Experts binds a 3-D weight of n experts (ggml [cols, rows, n]) as one
// matrix per expert, each a view of its slice of the data.
func (b *Binder) Experts(name string, n, rows, cols int) []*kernels.Matrix {
	t, ok := b.Src.Tensor(name)
	if !ok {
		b.fail("model: missing tensor %q", name)
		return nil
	}
	if len(t.Dims) != 3 || t.Dims[0] != uint64(cols) || t.Dims[1] != uint64(rows) || t.Dims[2] != uint64(n) {
		b.fail("model: tensor %q has shape %v, want [%d %d %d]", name, t.Dims, cols, rows, n)
		return nil
	}
	if len(t.Data)%n != 0 {
		b.fail("model: tensor %q: %d bytes do not split into %d experts", name, len(t.Data), n)
		return nil
	}
	per := len(t.Data) / n
	out := make([]*kernels.Matrix, n)
	for e := range out {
		m, err := kernels.NewMatrix(fmt.Sprintf("%s[%d]", name, e), t.Type, rows, cols, t.Data[e*per:(e+1)*per])
		if err != nil {
			b.fail("model: %w", err)
			return nil
		}
		// llama.cpp's mul_mat_id takes each row in its one-token order
		// (vec_dot, or the repacked gemv for types it repacks: Q4_0,
		// MXFP4), whatever the number of tokens: no GEMM order for experts.
		m.VecDotOnly = true
		out[e] = m
	}
	return out
}
