package kernels

//go:generate go run gen_gemm_float.go

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Float GEMM: F16, BF16 and F32 weights times two or more tokens.
//
// llama.cpp hands such products to llamafile's tinyBLAS (ggml-cpu's
// llamafile_sgemm takes them when the batch has n ≥ 2 tokens and the row
// length k is a multiple of 16; one token stays on ggml's vec_dot). The
// activations are those of vec_dot's type: float32 as they are for F32
// weights, rounded to F16 or BF16 for F16 or BF16 weights. tinyBLAS gives
// each output one 16-lane accumulator: lane l sums, by FMA, elements l,
// l+16, l+32, … of the row; the lanes are then added as
// _mm512_reduce_add_ps does (8+8, 4+4, 2+2, 1+1). Loom computes that function in that order: on the reference
// recordings the F32 files' worst logit differences dropped to ≤ 0.0001
// and the F16 ones shrank (tinyllama 0.029 → 0.024) against the ggml
// vec_dot order used before. The tiles below only decide which outputs are
// computed together, never the order of any sum.
//
// Tiles (SIMD builds): 4 weight rows × 6 tokens, 24 accumulators, each
// weight vector loaded (and converted) once and used six times, each
// activation vector used four times; the last tokens go to a narrower
// tile, the last rows (Rows % 4) to a full tile whose extra rows are
// dropped. The tiles read two sequential streams, packed for them as
// BLIS packs its operands:
//
//	activations  per six tokens, per chunk of 16 elements (32 for BF16
//	             pairs), the six tokens' chunks side by side (F16 weights
//	             take their activations as F16, like llama.cpp: half the
//	             bytes to stream), written once per product by the input
//	             conversion;
//	weights      per 4-row tile, per chunk, the four rows' chunks side by
//	             side (BF16 permuted into pairs), copied by each worker
//	             into its own buffer before it runs the tile for all
//	             tokens, while it asks for the next tile's rows
//	             (where g.prefetch is set: see gemmPrefetch).
//
// Read in place, the rows of a 2048-wide matrix and of its activations
// sit 4 KiB apart, on one set of the L1 cache's 64, and the tile's ten
// streams evicted one another: on Zen 5 the same tiles ran at 55–65% of
// their speed on packed operands. Tokens go in passes of up to
// panelTarget bytes of panels, each pass reading the weights once (one
// pass for 128 tokens of tinyllama's widths). Splitting long rows in blocks (the lane
// accumulators saved between blocks, the order unchanged) was measured
// and did not pay: the saved accumulators are 16 times the outputs.
//
// The portable build (and a CPU without AVX-512) multiplies plain rows
// with floatGemmGeneric.

// panelTile computes a 4-row × t tile: c[j·ldc + 4i] (ldc in bytes) = row
// i of the packed weight tile w · token j of the activation panel b, over
// chunks chunks.
type panelTile func(chunks int, w, b *byte, c *float32, ldc int)

// rowsTile is a panelTile reading the four weight rows in place, stride
// bytes apart, instead of a packed tile.
type rowsTile func(chunks int, w *byte, stride int, b *byte, c *float32, ldc int)

// floatGemm holds one weight type's tiles and the layouts they read; a
// generic floatGemm (tiles[1] nil) multiplies plain rows instead.
type floatGemm struct {
	name  string
	tiles [7]panelTile // tiles[t]: 4 rows × t tokens, t = 1…6
	// rowsTiles, when set, are the tiles on rows in place, for passes of
	// one panel (gemmTask.Do).
	rowsTiles [7]rowsTile
	// rowsPack, when set, is the 4×6 tile on rows in place that also
	// writes them as a packed tile (at its last argument).
	rowsPack func(chunks int, w *byte, stride int, b *byte, c *float32, ldc int, pk *byte)
	chunk    int // elements per chunk
	rowEl    int // bytes of one row's chunk in a packed weight tile
	slot     int // bytes of one token's chunk in an activation panel
	// pack copies rows[0..3] (k elements each) into a weight tile at dst.
	pack func(k int, rows *[4]*byte, dst *byte)
	// panel writes one token's activations, converted to what the tiles
	// read, into its slot of a panel: chunk c at dst[6·slot·c:].
	panel func(dst []byte, x []float32)
	// prefetch, when set, asks for bytes [off, off+n) of four rows in L2
	// (n a multiple of 64), without waiting for them.
	prefetch func(rows *[4]*byte, off, n int)
	// halves: the tiles read halves-major operands (gemm_avx2_amd64.go):
	// chunk is 8 elements, the weight tile is [half][chunk16][row][8] and
	// a panel [half][chunk16][token][8] (halvesPanelRow), float32.
	halves bool
	// row4, set on a floatGemm without tiles (CPUs with AVX2 but not
	// AVX-512), computes one weight row against four plain activation
	// rows (float32, ldx bytes apart) in the tiles' order: out[0:4].
	row4 func(chunks int, w, x *byte, ldx int, out *float32)
}

// gemmAlt holds, per type, the float GEMMs not registered here that this
// CPU can run — the other choices of software prefetches (gemmPrefetch)
// and of widened packing (gemmWiden), and for BF16 the VDPBF16PS tiles or
// the widened ones —, which the tests run too.
var gemmAlt = map[tensor.DType][]*floatGemm{}

const (
	panelTokens = 6 // tokens per activation panel
	tileRows    = 4 // weight rows per tile
)

// panelTarget bounds the panels of one pass over the weights. Passes that
// stayed in a 1 MiB L2 (768 KiB: two passes for 128 tokens of a 2048-wide
// model, five for 5632) ran each tile's first panel, which reads the rows
// from memory (rowsPack, 1.7–1.9 times a packed panel), once per pass;
// panels read from L3 cost the other panels less (Zen 4, tinyllama
// prefill, three alternating rounds, 768 KiB → 4 MiB: F16 1.5–3.5%, BF16
// 0.7–4.5% faster at 128 and 512 tokens, one and two threads). Intel's
// and Zen 5's L2 want less (panelTargetDefault, in the AVX-512 build). A
// variable so that tests can force many passes.
var panelTarget = 4 << 20

// panelSpan is panel pi's first token and number of tokens, of n: six a
// panel, but a last panel of one or two tokens shares the one before it
// evenly (8 = 4+4, 7 = 4+3, 14 = 6+4+4). A 4×1 or 4×2 tile loads and
// converts four weight vectors for every one or two tokens' multiply-adds:
// 53% and 89% of the 4×6 tile's speed on packed operands, 4×3 94%, 4×4
// 100% (Zen 4, k = 2048); a 128-token prompt ended in a 4×2 tile that took
// 2.2% of F16 prefill for 1.6% of its arithmetic.
func panelSpan(n, pi int) (j, nt int) {
	full, rem := n/panelTokens, n%panelTokens
	if rem == 0 || rem > 2 || full == 0 || pi < full-1 {
		return panelTokens * pi, min(panelTokens, n-panelTokens*pi)
	}
	j, h := panelTokens*(full-1), (panelTokens+rem+1)/2
	if pi == full-1 {
		return j, h
	}
	return j + h, panelTokens + rem - h
}

// panelSlot is the panel and slot of token t of n (panelSpan's layout).
func panelSlot(n, t int) (pi, slot int) {
	full, rem := n/panelTokens, n%panelTokens
	j := panelTokens * (full - 1)
	if rem == 0 || rem > 2 || full == 0 || t < j {
		return t / panelTokens, t % panelTokens
	}
	if h := (panelTokens + rem + 1) / 2; t-j >= h {
		return full, t - j - h
	}
	return full - 1, t - j
}

// panelBytes is the size of one six-token panel of g for rows of k
// elements.
func (g *floatGemm) panelBytes(k int) int { return (k + g.chunk - 1) / g.chunk * panelTokens * g.slot }

// gemmTask computes row tiles [lo, hi) (4 rows each) for all tokens.
type gemmTask struct {
	m   *Matrix
	g   *floatGemm
	act []byte // the input: panels (SIMD tiles) or n plain rows, ldb bytes apart
	ldb int    // bytes per panel, or per plain row
	n   int
	out []float32
	// tiles: each worker's scratch (the workspace's).
	tiles *[parallel.MaxThreads]tileScratch
	// prefetch: ask for the next tile's rows while a tile runs (one
	// worker only; see Do).
	prefetch bool
}

// tileScratch is one worker's scratch in the float GEMM: its packed
// weight tile and what the assembly is handed by pointer.
type tileScratch struct {
	w    []byte                          // the packed weight tile, grown on first use
	rows [tileRows]*byte                 // the weight rows being packed
	part [tileRows * panelTokens]float32 // a partial tile's outputs
}

func (t *gemmTask) Do(worker, lo, hi int) {
	m, g := t.m, t.g
	k, rows := m.Cols, m.Rows
	if g.tiles[1] == nil && g.row4 != nil {
		floatGemmRow4(m, g, t.act, t.ldb, t.out, tileRows*lo, min(tileRows*hi, rows), t.n, t.tiles[worker].part[:4])
		return
	}
	if g.tiles[1] == nil {
		for tile := lo; tile < hi; tile++ {
			floatGemmGeneric(m, t.act, t.ldb, t.out, tileRows*tile, min(tileRows*tile+tileRows, rows), 0, t.n)
		}
		return
	}
	chunks := (k + g.chunk - 1) / g.chunk
	panels := (t.n + panelTokens - 1) / panelTokens
	// Panels per pass over the rows: at most panelTarget bytes, the passes
	// of one size (each pass reads the weights again).
	per := max(1, panelTarget/t.ldb)
	per = (panels + (panels+per-1)/per - 1) / ((panels + per - 1) / per)
	ts := &t.tiles[worker]
	if size := chunks * tileRows * g.rowEl; len(ts.w) < size {
		ts.w = make([]byte, size)
	}
	wt, part := ts.w, ts.part[:]
	for p0 := 0; p0 < panels; p0 += per {
		p1 := min(panels, p0+per)
		// While a tile runs panel by panel, the next one's rows are asked
		// for (prefetch) a slice of cs chunks per panel: the weights' way
		// in from memory overlaps the arithmetic. (Packing the next tile
		// a slice at a time into a second buffer was slower: the two
		// tiles and a panel crowd the L1.) Only a pool of one worker does
		// it: with two, the prefetches cost a fifth of F16 prefill
		// (tinyllama, 128 tokens, 2 threads: 127-134 tok/s with them,
		// 143-167 without; one thread then 3-5% faster with them). F16
		// on Zen 4 runs without (gemmPrefetch: g.prefetch nil).
		cs := (chunks + p1 - p0 - 1) / (p1 - p0)
		for tile := lo; tile < hi; tile++ {
			r0 := tileRows * tile
			j0, nt0 := panelSpan(t.n, p0)
			whole := r0+tileRows <= rows
			if whole && p1-p0 == 1 && g.rowsTiles[nt0] != nil {
				// A pass of one panel (a few tokens: several sequences'
				// decode, a speculative verification) reads the weights
				// once: whole tiles read the rows in place (the hardware's
				// prefetchers follow four streams), as packing them would
				// read them twice.
				w := m.Data[r0*m.RowBytes : (r0+tileRows)*m.RowBytes]
				b := t.act[p0*t.ldb : p0*t.ldb+(chunks-1)*g.slot*panelTokens+g.slot*nt0]
				_ = t.out[(j0+nt0-1)*rows+r0+tileRows-1]
				g.rowsTiles[nt0](chunks, &w[0], m.RowBytes, &b[0], &t.out[j0*rows+r0], 4*rows)
				continue
			}
			// Otherwise the pass's first panel, when full (only a last
			// panel is not), runs on the rows in place and packs them as
			// it goes; else the tile is packed first.
			inPlace := whole && nt0 == panelTokens && g.rowsPack != nil
			if inPlace {
				w := m.Data[r0*m.RowBytes : (r0+tileRows)*m.RowBytes]
				b := t.act[p0*t.ldb : p0*t.ldb+chunks*g.slot*panelTokens]
				_ = t.out[(j0+panelTokens-1)*rows+r0+tileRows-1]
				_ = wt[chunks*tileRows*g.rowEl-1]
				g.rowsPack(chunks, &w[0], m.RowBytes, &b[0], &t.out[j0*rows+r0], 4*rows, &wt[0])
			} else {
				t.packSlice(ts, tile, 0, chunks, wt, false)
			}
			for pi := p0; pi < p1; pi++ {
				if t.prefetch && tile+1 < hi {
					t.packSlice(ts, tile+1, (pi-p0)*cs, min(chunks, (pi-p0+1)*cs), nil, true)
				}
				if pi == p0 && inPlace {
					continue
				}
				j, nt := panelSpan(t.n, pi)
				b := t.act[pi*t.ldb : pi*t.ldb+(chunks-1)*g.slot*panelTokens+g.slot*nt]
				if whole {
					_ = t.out[(j+nt-1)*rows+r0+tileRows-1]
					g.tiles[nt](chunks, &wt[0], &b[0], &t.out[j*rows+r0], 4*rows)
					continue
				}
				g.tiles[nt](chunks, &wt[0], &b[0], &part[0], 4*tileRows)
				for jj := range nt {
					copy(t.out[(j+jj)*rows+r0:(j+jj)*rows+rows], part[tileRows*jj:])
				}
			}
		}
	}
	ts.rows = [tileRows]*byte{} // hold no weights
}

// packSlice packs chunks [c0, c1) of row tile tile into its packed tile
// dst, or with prefetch only asks for those bytes of its rows.
func (t *gemmTask) packSlice(ts *tileScratch, tile, c0, c1 int, dst []byte, prefetch bool) {
	m, g := t.m, t.g
	if c0 >= c1 || prefetch && g.prefetch == nil {
		return
	}
	esz := m.RowBytes / m.Cols
	off, kk := c0*g.chunk*esz, min(m.Cols-c0*g.chunk, (c1-c0)*g.chunk)
	for i := range ts.rows { // a last partial tile repeats its last row
		ts.rows[i] = &m.Data[min(tileRows*tile+i, m.Rows-1)*m.RowBytes+off]
	}
	if prefetch {
		g.prefetch(&ts.rows, 0, (kk*esz+63)&^63)
		return
	}
	g.pack(kk, &ts.rows, &dst[c0*tileRows*g.rowEl])
}

// floatInput returns the float GEMM's input and its stride: with SIMD
// tiles, x converted into six-token panels (one panel every ldb bytes);
// otherwise plain rows, ldb bytes apart: x itself for F32 weights, x
// rounded to the weight type (held as float32) for F16 and BF16. The
// conversion goes into w's scratch, done unless an earlier product with the
// same input already did it.
func (w *Workspace) floatInput(p *parallel.Pool, m *Matrix, g *floatGemm, x []float32, n int, convert bool) (act []byte, ldb int) {
	q := quantTask{m: m, x: x[:n*m.Cols]}
	switch {
	case g.tiles[1] != nil:
		ldb = g.panelBytes(m.Cols)
		act = w.scratch((n + panelTokens - 1) / panelTokens * ldb)
		q.panel, q.slot, q.n, q.conv = ldb, g.slot, n, g.panel
	case m.Type == tensor.F32:
		x = x[:n*m.Cols]
		return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x)), 4 * m.Cols
	default:
		ldb = m.actRow
		act = w.scratch(n * ldb)
	}
	if convert {
		q.act = act
		w.quant = q
		p.RunTask(n, 1, &w.quant)
	}
	return act, ldb
}

// floatActBytes is the scratch floatInput needs for n tokens.
func (g *floatGemm) floatActBytes(m *Matrix, n int) int {
	if g.tiles[1] == nil {
		return n * m.actRow
	}
	return (n + panelTokens - 1) / panelTokens * g.panelBytes(m.Cols)
}

// matMulFloat runs the float GEMM on the input floatInput made.
func (w *Workspace) matMulFloat(p *parallel.Pool, m *Matrix, g *floatGemm, act []byte, ldb, n int, out []float32) {
	w.gemm = gemmTask{m: m, g: g, act: act, ldb: ldb, n: n, out: out[:n*m.Rows], tiles: &w.tiles, prefetch: p.Threads() == 1 && g.prefetch != nil}
	p.RunTask((m.Rows+tileRows-1)/tileRows, 1, &w.gemm)
	w.gemm = gemmTask{}
}

// Portable references of the panel writers (the tiles' input conversion).

// f32PanelRow writes x into a panel slot: chunk c (16 elements) at
// dst[384c:].
func f32PanelRow(dst []byte, x []float32) {
	for i, v := range x {
		putF32(dst[panelTokens*64*(i/16)+4*(i%16):], v)
	}
}

// f16PanelRow writes x rounded to F16 (vec_dot's type, nearest even) and
// held as float32 into a panel slot: chunk c (16 elements) at dst[384c:].
func f16PanelRow(dst []byte, x []float32) {
	for i, v := range x {
		putF32(dst[panelTokens*64*(i/16)+4*(i%16):], quant.RoundF16(v))
	}
}

// halvesPanelRow writes x (a multiple of 16 elements), each value
// rounded by round, into its slot of a halves-major panel (floatGemm.halves):
// chunk c's low eight elements at dst[192c:], its high eight 192·len(x)/16
// bytes further.
func halvesPanelRow(dst []byte, x []float32, round func(float32) float32) {
	c16 := len(x) / 16
	for i, v := range x {
		putF32(dst[((i%16/8)*c16+i/16)*panelTokens*32+4*(i%8):], round(v))
	}
}

// floatGemmGeneric is the portable float GEMM over rows [r0, r1) and tokens
// [t0, t1): tinyBLAS's order, with a rounded multiply and add where the
// SIMD tiles fuse them (within a few ulps of the terms' magnitude; the
// tests pin the SIMD tiles bit-exactly to an exact-FMA emulation).
func floatGemmGeneric(m *Matrix, act []byte, ldb int, out []float32, r0, r1, t0, t1 int) {
	k, rows := m.Cols, m.Rows
	var w [16]float32
	for r := r0; r < r1; r++ {
		row := m.Data[r*m.RowBytes : (r+1)*m.RowBytes]
		for j := t0; j < t1; j++ {
			xj := unsafe.Slice((*float32)(unsafe.Pointer(&act[j*ldb])), k)
			var acc [16]float32
			for l := 0; l < k; l += 16 {
				floatLoad16(&w, m.Type, row, l)
				b := xj[l : l+16]
				for i := range acc {
					acc[i] += float32(w[i] * b[i])
				}
			}
			out[j*rows+r] = reduce16(&acc)
		}
	}
}

// floatGemmRow4 is floatGemmGeneric's product, rows [r0, r1) by all n
// tokens, on g.row4: four tokens at a time, a last one to three tokens by
// the same kernel reading one token four times (stride 0). four is the
// worker's scratch for the kernel's results (a local would escape
// through the function value: an allocation per product).
func floatGemmRow4(m *Matrix, g *floatGemm, act []byte, ldb int, out []float32, r0, r1, n int, four []float32) {
	k, rows := m.Cols, m.Rows
	chunks := k / 16
	_ = act[(n-1)*ldb+4*k-1]
	_ = four[3]
	for r := r0; r < r1; r++ {
		w := m.Data[r*m.RowBytes : (r+1)*m.RowBytes]
		j := 0
		for ; j+4 <= n; j += 4 {
			g.row4(chunks, &w[0], &act[j*ldb], ldb, &four[0])
			out[j*rows+r], out[(j+1)*rows+r], out[(j+2)*rows+r], out[(j+3)*rows+r] = four[0], four[1], four[2], four[3]
		}
		for ; j < n; j++ {
			g.row4(chunks, &w[0], &act[j*ldb], 0, &four[0])
			out[j*rows+r] = four[0]
		}
	}
}

// floatLoad16 converts weights [l, l+16) of a F16, BF16 or F32 row to
// float32.
func floatLoad16(w *[16]float32, t tensor.DType, row []byte, l int) {
	switch t {
	case tensor.F16:
		for i := range w {
			w[i] = quant.F16ToF32(binary.LittleEndian.Uint16(row[2*(l+i):]))
		}
		return
	case tensor.BF16:
		for i := range w {
			w[i] = bf16le(row[2*(l+i):])
		}
		return
	}
	for i := range w {
		w[i] = math.Float32frombits(binary.LittleEndian.Uint32(row[4*(l+i):]))
	}
}

// reduce16 adds sixteen lanes in _mm512_reduce_add_ps's tree.
func reduce16(a *[16]float32) float32 {
	var h [8]float32
	for i := range h {
		h[i] = a[i] + a[i+8]
	}
	var q [4]float32
	for i := range q {
		q[i] = h[i] + h[i+4]
	}
	return (q[0] + q[2]) + (q[1] + q[3])
}
