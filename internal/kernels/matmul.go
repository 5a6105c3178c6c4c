// Package kernels holds the hot loops of the forward pass. This file:
// out = x · Wᵀ for a weight matrix of any supported type, the operation of
// ggml_mul_mat on the CPU backend. Activations are first converted to the
// weight type's vec_dot type (Q8_0/Q8_1/Q8_K for quantized weights, the
// weight's own float type otherwise) exactly as ggml does, and then every
// output is one dot product; see internal/quant for the reference numbers.
package kernels

import (
	"fmt"
	"unsafe"

	"github.com/loom-inference/loom/internal/hugepage"
	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// Matrix is a 2-D weight in ggml layout: Rows rows of Cols elements each
// (ggml ne0 = Cols, ne1 = Rows), stored as blocks of Type.
//
// A Matrix is immutable once bound and packed (NewMatrix, Pack and the
// two flags below are load time): a product keeps its per-call state in
// the caller's Workspace, so any number of runners multiply by one model's
// weights at once.
type Matrix struct {
	Name       string
	Type       tensor.DType
	Rows, Cols int
	Data       []byte // [Rows][RowBytes]
	RowBytes   int
	row        *typeRow // the type's kernels (table.go); row.ref its references
	rowImpl    Impl     // row-at-a-time kernels, chosen by NewMatrix and Pack
	actRow     int      // bytes of one activation row in the vec_dot type (plus the packed kernels' tail)

	quantize func(y []byte, x []float32) // activations → row.ref.ActType

	packed []byte        // full 16-row groups repacked (see packed.go), nil when not packed
	pf     *packedFormat // their layout and kernels

	// VecDotOnly keeps ggml's one-row vec_dot order for any number of
	// tokens (no float GEMM): llama.cpp's mul_mat_id (expert weights)
	// works that way.
	VecDotOnly bool

	// Embedding marks a token-embedding table. llama.cpp leaves those in
	// its plain CPU buffer (its repacking covers matrix-product weights), so
	// a tied LM head keeps ggml's vec_dot order instead of the repacked one.
	Embedding bool
}

// Pack repacks the matrix into the interleaved 16-row layout when this CPU
// has kernels for its type (a copy of the weights; Data stays for Row and
// the rows past the last full group). Call it once, before the first
// MatMul, on matrices that are multiplied (not on embedding tables).
//
// Where llama.cpp repacks the type itself (row count permitting, never an
// embedding table; mul_mat and mul_mat_id alike, so expert matrices too),
// its order wins: the repacked layout's kernels, or without them (another
// CPU, fewer than 16 rows) that order's portable reference.
func (m *Matrix) Pack() {
	if f := m.packFormat(); f != nil {
		m.packWith(f, nil)
	}
}

// PackAll packs every matrix of ms as Pack does, their packed copies
// carved from one allocation that starts on a huge page and is advised
// for huge pages (hugepage.Aligned): one copy per matrix would leave
// every matrix under 2 MiB, and both ends of the larger ones, on 4 KiB
// pages (44% of tinyllama-1.1b Q4_0's packed bytes), and a one-token
// product streams them a TLB walk and a prefetcher restart every 4 KiB.
// A matrix listed twice (a tied LM head) is packed once. The allocation
// lives as long as any of the matrices.
func PackAll(ms []*Matrix) {
	type job struct {
		m *Matrix
		f *packedFormat
	}
	var jobs []job
	total := 0
	seen := map[*Matrix]bool{}
	for _, m := range ms {
		if m == nil || seen[m] {
			continue
		}
		seen[m] = true
		if f := m.packFormat(); f != nil {
			jobs = append(jobs, job{m, f})
			total += alignLine(m.packedSize(f))
		}
	}
	if total == 0 {
		return
	}
	arena := hugepage.Aligned(total)
	off := 0
	for _, j := range jobs {
		n := j.m.packedSize(j.f)
		j.m.packWith(j.f, arena[off:off+n:off+n])
		off += alignLine(n)
	}
}

// alignLine rounds n up to a cache line, so each packed copy starts on one.
func alignLine(n int) int { return (n + 63) &^ 63 }

// packFormat is the packed layout Pack would repack m into, nil when it
// would not (no kernels for the type on this CPU, too few rows, already
// packed). Where llama.cpp's repack order applies, it selects that
// order's portable reference for m's rows either way.
func (m *Matrix) packFormat() *packedFormat {
	r := m.row
	f := r.packed
	if ro := r.repack; ro != nil && m.Rows%ro.rowMultiple == 0 && !m.Embedding {
		m.rowImpl = ro.rowImpl(m.Type)
		f = ro.format
	}
	if f == nil || m.packed != nil || m.Rows < groupRows || m.Cols%f.blockCols != 0 {
		return nil
	}
	return f
}

// Packed reports whether products read the repacked copy Pack made
// rather than Data (which then serves Row and the rows past the last
// full group only).
func (m *Matrix) Packed() bool { return m.packed != nil }

// packWith repacks into format f (into dst, packedSize(f) bytes, or a
// fresh allocation when dst is nil) and selects the kernels of its order
// for the rows past the last full group.
func (m *Matrix) packWith(f *packedFormat, dst []byte) {
	m.repack(f, dst)
	m.rowImpl = m.row.best()
	if f.rest != nil {
		m.rowImpl = Impl{Name: f.name + " order (generic)", Dot: f.rest}
	}
	ab, _ := tensor.RowBytes(m.row.ref.ActType, uint64(m.Cols))
	m.actRow = int(ab) + f.tailBytes(m.Cols)
}

// plan is how MatMul computes one product: the float GEMM over all tokens,
// or the packed 16-row groups, or weight rows one at a time (and the rows
// past the last packed group). m.plan is the one place that decides it,
// from the type table and the layout Pack chose; Kernel and GemmKernel
// report it.
type plan struct {
	gemm   *floatGemm
	packed *packedFormat
	rows   Impl
}

func (m *Matrix) plan(n int) plan {
	r := m.row
	// llamafile_sgemm's condition: two or more tokens, a row length that
	// is a multiple of 16, and (tinyBLAS::matmul) a number of rows that is
	// a multiple of 4 — a [dim]-vector weight such as a shared expert's
	// gate goes to vec_dot; mul_mat_id (VecDotOnly) never goes there.
	if r.gemm != nil && n >= 2 && m.Cols%16 == 0 && m.Rows%4 == 0 && !m.VecDotOnly {
		return plan{gemm: r.gemm}
	}
	rows := m.rowImpl
	if rows.Batch != nil && n >= 2 && !m.VecDotOnly { // llama.cpp's batch order
		rows = Impl{Name: rows.Name, Dot: rows.Batch}
	}
	return plan{packed: m.pf, rows: rows}
}

func (p plan) String() string {
	switch {
	case p.gemm != nil:
		return "float gemm " + p.gemm.name
	case p.packed != nil:
		return p.packed.String()
	}
	return p.rows.Name
}

// usesFloatGemm: whether MatMul on m with n tokens goes to the float GEMM.
func (m *Matrix) usesFloatGemm(n int) bool { return m.plan(n).gemm != nil }

// Kernel names the implementation MatMul uses for one token (for
// benchmarks and tools); GemmKernel the one for several.
func (m *Matrix) Kernel() string { return m.plan(1).String() }

// GemmKernel names the implementation MatMul uses for n ≥ 2 tokens.
func (m *Matrix) GemmKernel() string { return m.plan(2).String() }

// NewMatrix checks that data holds rows×cols elements of type t.
func NewMatrix(name string, t tensor.DType, rows, cols int, data []byte) (*Matrix, error) {
	row, err := rowOf(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ops := row.ref
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
	m := &Matrix{Name: name, Type: t, Rows: rows, Cols: cols, Data: data, RowBytes: int(rb), row: row, rowImpl: row.best(), actRow: int(ab)}
	m.quantize = actQuant[ops.VecDot].run
	return m, nil
}

// Row dequantizes row r into dst[:Cols].
func (m *Matrix) Row(dst []float32, r int) {
	m.row.ref.Dequant(dst[:m.Cols], m.Data[r*m.RowBytes:(r+1)*m.RowBytes])
}

// ActBytes is the activation scratch a product of n tokens needs (a
// Workspace holds it).
func (m *Matrix) ActBytes(n int) int {
	if g := m.row.gemm; g != nil {
		return max(n*m.actRow, g.floatActBytes(m, n))
	}
	return n * m.actRow
}

// sameInput: m reads activation rows converted exactly as o's. Float
// weights share the F32 layout but not the rounding (F16, BF16, none), so
// those must be of one type.
func (m *Matrix) sameInput(o *Matrix) bool {
	return m.Cols == o.Cols && m.row.ref.ActType == o.row.ref.ActType && m.actRow == o.actRow &&
		m.pf == o.pf && (m.row.ref.ActType != tensor.F32 || m.Type == o.Type)
}

// quantTask converts activation rows [lo, hi) to the vec_dot type, m.actRow
// bytes apart, or with slot set into the float GEMM's six-token panels
// (gemm_float.go).
type quantTask struct {
	m   *Matrix
	x   []float32
	act []byte
	// The panels: panel bytes each, token t of n in panelSlot(n, t)'s
	// slot (slot bytes each), written by conv.
	panel, slot, n int
	conv           func(dst []byte, x []float32)
}

func (q *quantTask) Do(_, lo, hi int) {
	m, cols := q.m, q.m.Cols
	for t := lo; t < hi; t++ {
		if q.slot > 0 {
			pi, slot := panelSlot(q.n, t)
			p := pi * q.panel
			q.conv(q.act[p+q.slot*slot:p+q.panel], q.x[t*cols:(t+1)*cols])
			continue
		}
		row := q.act[t*m.actRow : (t+1)*m.actRow]
		m.quantize(row, q.x[t*cols:(t+1)*cols])
		if m.pf != nil {
			m.pf.tail(row, cols)
		}
	}
}

// mmTask computes output rows [lo, hi) of one MatMul (a Workspace's).
type mmTask struct {
	m    *Matrix
	impl Impl // the row kernels of the plan
	act  []byte
	out  []float32
	n    int
	// oneThread: one thread runs the product (the packed formats whose
	// one-token streams pay only there; packedFormat.streamsAlone).
	oneThread bool
	// groups > 0: items [0, groups) are packed 16-row groups and item
	// groups+i is row 16·groups+i.
	groups int
	// y4: the one token's activation row as impl.Rows4 reads it (act's,
	// or narrowed by impl.Narrow); nil when Rows4 does not run.
	y4 []byte
	// Per-worker results of the four-token kernel, a cache line each
	// (fourOf aligns them): a worker writing a line that another worker
	// writes, or reads the fields above from, bounces it between the
	// cores every row — with two threads, speculative verification's
	// products ran slower than with one.
	four [(parallel.MaxThreads + 1) * 16]float32
}

// fourOf is worker's four result slots, alone in their cache line.
func (t *mmTask) fourOf(worker int) []float32 {
	skip := (64 - int(uintptr(unsafe.Pointer(&t.four[0]))%64)) % 64 / 4
	o := skip + 16*worker
	return t.four[o : o+4 : o+4]
}

func (t *mmTask) Do(worker, lo, hi int) {
	if t.groups > 0 {
		if lo < t.groups {
			t.packedDo(lo, min(hi, t.groups))
		}
		if hi > t.groups {
			base := t.groups*groupRows - t.groups
			t.rowsDo(worker, max(lo, t.groups)+base, hi+base)
		}
		return
	}
	t.rowsDo(worker, lo, hi)
}

// rowsDo computes output rows [lo, hi) one weight row at a time.
func (t *mmTask) rowsDo(worker, lo, hi int) {
	m, rows := t.m, t.m.Rows
	d4, dot := t.impl.Dot4, t.impl.Dot
	act, out, n, y4 := t.act, t.out, t.n, t.y4 // read once: the task is shared
	four := t.fourOf(worker)
	if r4 := t.impl.Rows4; r4 != nil && y4 != nil && hi-lo >= 4 {
		// One token: four sequential streams, a quarter of the range
		// apart, then the rows the quarters leave.
		q := (hi - lo) / 4
		row := func(r int) []byte { return m.Data[r*m.RowBytes : (r+1)*m.RowBytes] }
		y := act[:m.actRow]
		for r := lo; r < lo+q; r++ {
			r4(m.Cols, row(r), row(r+q), row(r+2*q), row(r+3*q), y4, four)
			out[r], out[r+q], out[r+2*q], out[r+3*q] = four[0], four[1], four[2], four[3]
		}
		for r := lo + 4*q; r < hi; r++ {
			out[r] = dot(m.Cols, row(r), y)
		}
		return
	}
	for r := lo; r < hi; r++ {
		w := m.Data[r*m.RowBytes : (r+1)*m.RowBytes]
		i := 0
		if d4 != nil {
			for ; i+4 <= n; i += 4 {
				d4(m.Cols, w, act[i*m.actRow:(i+4)*m.actRow], m.actRow, four)
				for k, v := range four {
					out[(i+k)*rows+r] = v
				}
			}
		}
		for ; i < n; i++ {
			out[i*rows+r] = dot(m.Cols, w, act[i*m.actRow:(i+1)*m.actRow])
		}
	}
}
