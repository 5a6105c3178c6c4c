package nn

import (
	"math"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/libm"
	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// The tiled path: attention with an online softmax over the cache's
// blocks, as ggml's flash attention computes it (llama.cpp -fa), for a
// cache of any type (kvcache.Types). It never holds a whole score row: per
// block of 32 positions it takes the scores, raises the running maximum
// (rescaling what was summed so far by e^(old−new)), and adds the block's
// weighted values. One job is a token and a KV head: the query heads that
// share that head (GQA) read each key and value row once.
//
// Arithmetic as ggml's flash attention: each query converted once to the
// key type's vec_dot type, scores by that type's dot product (F16 keys:
// ggml_vec_dot_f16 on f16(q)), values dequantized exactly and accumulated
// in float32 with fused multiply-adds (ggml_vec_mad_f32); the blockwise
// maximum and the vectorized exponentials differ from ggml's position-by-
// position update only in rounding, within llama.cpp's own variation
// between its flash and non-flash paths.

// flashScratch is one worker's buffers: group = the query heads of a KV
// head.
type flashScratch struct {
	qa       []byte    // [tile·group][actBytes] queries in the key type's vec_dot layout
	acc      []float32 // [tile·group, HeadDim] running Σ e^(s−M)·v
	sc       []float32 // [tile·group, BlockSize] one block's scores, then weights
	m        []float32 // [tile·group] running maxima
	s        []float64 // [tile·group] running Σ e^(s−M)
	vf       []float32 // [BlockSize, HeadDim] one block's value rows, dequantized
	q16      []float32 // [tile·group·HeadDim] F16 queries (transposed F16 keys)
	from, to []int32   // [tile] each token's visible positions
	full     []float32 // [BlockSize] a whole block's F16 scores
	o4       []float32 // [4] Dot4's scores (scratch, so nothing escapes per row)
}

func newFlashScratch(group, headDim int) flashScratch {
	nq := flashTile * group
	return flashScratch{qa: make([]byte, nq*4*headDim), m: make([]float32, nq), s: make([]float64, nq),
		acc: make([]float32, nq*headDim), sc: make([]float32, nq*kvcache.BlockSize),
		vf: make([]float32, kvcache.BlockSize*headDim), q16: make([]float32, nq*headDim),
		from: make([]int32, flashTile), to: make([]int32, flashTile),
		full: make([]float32, kvcache.BlockSize), o4: make([]float32, 4)}
}

// flashTask runs Attention.forwardFlash's jobs.
type flashTask struct{ a *Attention }

func (t flashTask) Do(w, lo, hi int) { t.a.flashDo(w, lo, hi) }

// forwardFlash is Forward on the tiled path.
func (a *Attention) forwardFlash(p *parallel.Pool) {
	if a.kDot.Dot == nil || a.kDot.Type != a.Types.K || a.vDot.Type != a.Types.V {
		var err error
		if a.kDot, err = kernels.RowDotFor(a.Types.K); err != nil {
			panic(err) // the engine checked the cache types
		}
		if a.vDot, err = kernels.RowDotFor(a.Types.V); err != nil {
			panic(err)
		}
	}
	a.tileBatch()
	jobs := (len(a.tiles) - 1) * a.NKVHeads
	a.splits = a.splitsFor(jobs, p.Threads())
	if a.splits > 1 {
		a.part.grow(jobs*a.splits, flashTile*(a.NHeads/a.NKVHeads), a.HeadDim)
	}
	p.RunTask(jobs*a.splits, 1, flashTask{a})
	if a.splits > 1 {
		a.combineSplits(jobs)
	}
}

// Flash-decoding: when a batch has fewer (KV head, tile) jobs than
// threads — one sequence decoding, with fewer KV heads than cores — each
// job's positions are split into a.splits contiguous ranges of blocks,
// computed as separate jobs (each its own running max, sum and weighted
// values), then combined: M = max m_i, S = Σ s_i·e^(m_i−M), out = Σ
// acc_i·e^(m_i−M) / S. A split needs at least flashSplitBlocks blocks to
// pay for its combine.
var flashSplitBlocks = 8

// splitsFor is how many splits each of jobs takes on threads threads.
func (a *Attention) splitsFor(jobs, threads int) int {
	if jobs <= 0 || jobs >= threads {
		return 1
	}
	c := &a.cur
	longest := 0 // positions of the longest tile's last token
	for ti := range len(a.tiles) - 1 {
		t := int(a.tiles[ti+1]) - 1
		nk := int(c.pos[t]) + 1
		if a.NonCausal {
			nk = len(c.seqs[c.seq[t]].VRows)
		}
		longest = max(longest, nk)
	}
	return max(1, min(threads/jobs, longest/(flashSplitBlocks*kvcache.BlockSize)))
}

// flashParts holds every split job's partial results: job i's query q
// (of up to flashTile·group) at [i·nq + q].
type flashParts struct {
	nq, hd int
	m      []float32
	s      []float64
	acc    []float32 // [jobs·nq, hd]
}

func (f *flashParts) grow(jobs, nq, hd int) {
	f.nq, f.hd = nq, hd
	if n := jobs * nq; len(f.m) < n {
		f.m, f.s, f.acc = make([]float32, n), make([]float64, n), make([]float32, n*hd)
	}
}

// combineSplits merges each job's splits into its output rows.
func (a *Attention) combineSplits(jobs int) {
	c := &a.cur
	hd, qDim, group := a.HeadDim, a.NHeads*a.HeadDim, a.NHeads/a.NKVHeads
	nt, sp, f := len(a.tiles)-1, a.splits, &a.part
	for base := range jobs {
		kvh, ti := base/nt, base%nt
		t0, t1 := int(a.tiles[ti]), int(a.tiles[ti+1])
		for q := range (t1 - t0) * group {
			t, h := t0+q/group, kvh*group+q%group
			o := c.out[t*qDim+h*hd : t*qDim+(h+1)*hd]
			mx := float32(math.Inf(-1))
			for i := range sp {
				mx = max(mx, f.m[(base*sp+i)*f.nq+q])
			}
			clear(o)
			sum := 0.0
			for i := range sp {
				k := (base*sp+i)*f.nq + q
				if f.s[k] == 0 {
					continue
				}
				r := libm.Expf(f.m[k] - mx)
				sum += f.s[k] * float64(r)
				kernels.MadF32(o, f.acc[k*hd:(k+1)*hd], r)
			}
			if sum > 0 {
				kernels.ScaleF32(o, float32(1/sum))
			}
		}
	}
}

// flashTile is how many consecutive tokens of one sequence a job takes:
// their queries share each key row's unpacking and each value row's
// dequantization.
const flashTile = 8

// tileBatch cuts the batch into runs of at most flashTile consecutive tokens
// of one sequence (a.tiles: their starts, then n).
func (a *Attention) tileBatch() {
	c := &a.cur
	a.tiles = a.tiles[:0]
	for t := 0; t < c.n; {
		a.tiles = append(a.tiles, int32(t))
		e := t + 1
		for e < c.n && e-t < flashTile && c.seq[e] == c.seq[t] && c.pos[e] == c.pos[e-1]+1 {
			e++
		}
		t = e
	}
	a.tiles = append(a.tiles, int32(c.n))
}

// flashDo computes the (KV head, tile) jobs [lo, hi) on worker w. A tile's
// query q = (token − first)·group + g; the tokens' visible ranges
// [from, to) grow with the position, so the queries that see a row are a
// contiguous run.
func (a *Attention) flashDo(w, lo, hi int) {
	c := &a.cur
	const B = kvcache.BlockSize
	hd, qDim := a.HeadDim, a.NHeads*a.HeadDim
	kvDim := a.NKVHeads * a.HeadDim
	if a.RowDim > 0 {
		kvDim = a.RowDim
	}
	group := a.NHeads / a.NKVHeads
	nt := len(a.tiles) - 1
	f := &a.flash[w]
	kt, vt := a.Types.K, a.Types.V
	transposed := kvcache.Transposed(kt)
	kw := kvcache.HeadWords(kt, kvDim)                               // words of a key row
	khw, vhw := kvcache.HeadWords(kt, hd), kvcache.HeadWords(vt, hd) // of one head
	ab := a.kDot.ActBytes(hd)
	kb, vb := kvcache.Bytes(c.k), kvcache.Bytes(c.v)
	ninf := float32(math.Inf(-1))
	// Q8_0 keys in columns (scored a block at a time), Q8_0 values a block
	// at a time where kernels for them exist.
	columns := kvcache.Columns(kt)
	fastQ8V := vt == tensor.Q8_0 && kernels.FastQ8_0()
	fastF16V := vt == tensor.F16 && kernels.FastF16Rows()
	for job := lo; job < hi; job++ {
		base, sp := job/a.splits, job%a.splits
		kvh, ti := base/nt, base%nt
		t0, t1 := int(a.tiles[ti]), int(a.tiles[ti+1])
		s := &c.seqs[c.seq[t0]]
		nq := (t1 - t0) * group
		lowest, highest := math.MaxInt, 0
		for t := t0; t < t1; t++ {
			p := int(c.pos[t])
			nk := p + 1
			if a.NonCausal {
				nk = len(s.VRows)
			}
			from, to := a.visible(p, nk)
			f.from[t-t0], f.to[t-t0] = int32(from), int32(to)
			lowest, highest = min(lowest, from), max(highest, to)
			for g := range group {
				h, q := kvh*group+g, (t-t0)*group+g
				qh := c.q[t*qDim+h*hd : t*qDim+(h+1)*hd]
				if transposed {
					// ggml_vec_dot_f16 on f16(q): the exact kernel's one-token order.
					q16 := f.q16[q*hd : (q+1)*hd]
					copy(q16, qh)
					kernels.RoundF16s(q16)
				} else {
					a.kDot.Quantize(f.qa[q*ab:(q+1)*ab], qh)
				}
				f.m[q], f.s[q] = ninf, 0
				if a.Sinks != nil && sp == 0 { // a sink joins the sum (once) with no value
					f.m[q], f.s[q] = a.Sinks[h], 1
				}
				clear(f.acc[q*hd : (q+1)*hd])
			}
		}
		// seen is the run of queries that see position j.
		seen := func(j int) (int, int) {
			ta, tb := 0, t1-t0
			for ta < tb && int(f.to[ta]) <= j {
				ta++
			}
			for tb > ta && int(f.from[tb-1]) > j {
				tb--
			}
			return ta * group, tb * group
		}
		// This split's blocks: the sp-th of a.splits contiguous shares.
		b0, b1 := lowest/B, (highest+B-1)/B
		b0, b1 = b0+(b1-b0)*sp/a.splits, b0+(b1-b0)*(sp+1)/a.splits
		for blk := b0; blk < b1; blk++ {
			j0, j1 := max(lowest, blk*B), min(highest, (blk+1)*B)
			b := int(s.Blocks[blk])
			scq := func(q int) []float32 { return f.sc[q*B : q*B+j1-j0] }
			// Scores: every query's row of the block, −∞ where it does
			// not see the position.
			scored := transposed
			if transposed {
				// The block's positions from j0: every query at once, each
				// K row converted once for them.
				ks := c.k[kvcache.KRow(int32(b), kvDim, kvh*hd)+j0-blk*B:]
				var next []uint16
				if blk+1 < b1 {
					next = c.k[kvcache.KRow(s.Blocks[blk+1], kvDim, kvh*hd):]
				}
				kernels.ScoresF16NNext(f.sc, B, j1-j0, f.q16, hd, hd, nq, ks, a.koff, kernels.OrderVecDot, next)
			} else if columns {
				// The head's groups of the block's column layout: every
				// query against the block's slots at once.
				var next []byte
				if blk+1 < b1 {
					next = kb[colHead(int(s.Blocks[blk+1]), kw, kvh, khw):]
				}
				kernels.ScoresQ8_0Cols(f.sc, B, f.qa, ab, nq, kb[colHead(b, kw, kvh, khw):], j0-blk*B, j1-blk*B, hd, next)
				scored = true
			}
			allSee := true // every query sees every position of the block
			for t := range t1 - t0 {
				allSee = allSee && int(f.from[t]) <= j0 && int(f.to[t]) >= j1
			}
			// The mask (and the scores the block kernels did not take),
			// position by position: nothing to mask when every query sees
			// the whole block.
			for j := j0; j < j1 && !(scored && allSee); j++ {
				qa, qb := seen(j)
				for q := range qa {
					f.sc[q*B+j-j0] = ninf
				}
				for q := qb; q < nq; q++ {
					f.sc[q*B+j-j0] = ninf
				}
				if scored {
					continue
				}
				at := ((b*B+j%B)*kw + kvh*khw) * 2
				row := kb[at : at+khw*2]
				q := qa
				if a.kDot.Dot4 != nil {
					o4 := f.o4
					for ; q+4 <= qb; q += 4 {
						a.kDot.Dot4(hd, row, f.qa[q*ab:], ab, o4)
						for i, x := range o4 {
							f.sc[(q+i)*B+j-j0] = x
						}
					}
				}
				for ; q < qb; q++ {
					f.sc[q*B+j-j0] = a.kDot.Dot(hd, row, f.qa[q*ab:(q+1)*ab])
				}
			}
			// The online softmax: scale (and cap), raise the maximum,
			// rescale the sums so far, weigh the block.
			for q := range nq {
				sc := scq(q)
				var mx float32
				if a.SoftCap > 0 {
					mx = ninf
					for j, x := range sc {
						if x == ninf {
							continue
						}
						sc[j] = softcap(x*a.Scale, 1/a.SoftCap, a.SoftCap)
						mx = max(mx, sc[j])
					}
				} else {
					mx = kernels.ScaleMax(sc, a.Scale) // −∞ stays −∞
				}
				if mx == ninf { // the query sees nothing here
					clear(sc)
					continue
				}
				if mx > f.m[q] {
					if f.m[q] != ninf {
						r := libm.Expf(f.m[q] - mx)
						kernels.ScaleF32(f.acc[q*hd:(q+1)*hd], r)
						f.s[q] *= float64(r)
					}
					f.m[q] = mx
				}
				f.s[q] += kernels.ExpSum(sc, sc, f.m[q])
			}
			// Values: the block's rows dequantized once for the tile,
			// then every query's weighted sum over them in row order (a
			// query that does not see a row weighs it e^−∞ = 0); Q8_0
			// and F16 rows are converted inside that sum.
			if fastQ8V || fastF16V {
				var next []int32
				if blk+1 < b1 {
					next = s.VRows[(blk+1)*B : min((blk+2)*B, len(s.VRows))]
				}
				if fastQ8V {
					kernels.MadRowsQ8_0(f.acc, hd, f.sc, B, vb[kvh*vhw*2:], s.VRows[j0:j1], nq, j1-j0, hd, next)
				} else {
					kernels.MadRowsF16(f.acc, hd, f.sc, B, vb[kvh*vhw*2:], s.VRows[j0:j1], nq, j1-j0, hd, next)
				}
				continue
			}
			for j := j0; j < j1; j++ {
				at := (int(s.VRows[j]) + kvh*vhw) * 2
				row, vf := vb[at:at+vhw*2], f.vf[(j-j0)*hd:(j-j0+1)*hd]
				if vt == tensor.F16 {
					kernels.F16ToF32s(vf, row)
				} else {
					a.vDot.Dequant(vf, row)
				}
			}
			kernels.MadRows(f.acc, hd, f.sc, B, f.vf, hd, nq, j1-j0, hd)
		}
		if a.splits > 1 { // partial results, combined by combineSplits
			pt := &a.part
			k := job * pt.nq
			copy(pt.m[k:k+nq], f.m[:nq])
			copy(pt.s[k:k+nq], f.s[:nq])
			copy(pt.acc[k*hd:(k+nq)*hd], f.acc[:nq*hd])
			if c.obs == nil || sp != 0 {
				continue
			}
		}
		for t := t0; t < t1; t++ {
			for g := range group {
				h, q := kvh*group+g, (t-t0)*group+g
				if a.splits > 1 {
					break // the observer's turn below; combineSplits writes the output
				}
				o := c.out[t*qDim+h*hd : t*qDim+(h+1)*hd]
				inv := float32(0)
				if f.s[q] > 0 {
					inv = float32(1 / f.s[q])
				}
				for i, x := range f.acc[q*hd : (q+1)*hd] {
					o[i] = x * inv
				}
			}
			if c.obs != nil {
				nk := int(c.pos[t]) + 1
				if a.NonCausal {
					nk = len(s.VRows)
				}
				a.observeFlash(w, t, kvh, s, int(f.from[t-t0]), int(f.to[t-t0]), nk)
			}
		}
	}
}

// colHead is where, in a layer's K bytes, KV head kvh's groups of block b
// begin in the column layout (kw words a position, khw a head).
func colHead(b, kw, kvh, khw int) int {
	return 2 * (b*kvcache.BlockSize*kw + kvh*kvcache.BlockSize*khw)
}

// observeFlash gives the observer each query head's weights for token t,
// recomputed whole (explain only: the tiled path keeps no score row).
func (a *Attention) observeFlash(w, t, kvh int, s *Seq, from, to, nk int) {
	c := &a.cur
	const B = kvcache.BlockSize
	hd, qDim, group := a.HeadDim, a.NHeads*a.HeadDim, a.NHeads/a.NKVHeads
	kvDim := a.NKVHeads * a.HeadDim
	if a.RowDim > 0 {
		kvDim = a.RowDim
	}
	f := &a.flash[w]
	kt := a.Types.K
	kw, khw, ab := kvcache.HeadWords(kt, kvDim), kvcache.HeadWords(kt, hd), a.kDot.ActBytes(hd)
	kb := kvcache.Bytes(c.k)
	sc := a.scores[w][:pad(nk, 16)]
	for g := range group {
		h := kvh*group + g
		qh := c.q[t*qDim+h*hd : t*qDim+(h+1)*hd]
		for j := range sc {
			sc[j] = float32(math.Inf(-1))
		}
		for blk := from / B; blk*B < to; blk++ {
			j0, j1 := max(from, blk*B), min(to, (blk+1)*B)
			b := int(s.Blocks[blk])
			if kvcache.Transposed(kt) {
				q16 := f.q16[:hd]
				copy(q16, qh)
				kernels.RoundF16s(q16)
				full := f.full
				kernels.ScoresF16(full, q16, c.k[kvcache.KRow(int32(b), kvDim, kvh*hd):], a.koff, kernels.OrderVecDot)
				copy(sc[j0:j1], full[j0-blk*B:j1-blk*B])
				continue
			}
			qa := f.qa[g*ab : (g+1)*ab]
			a.kDot.Quantize(qa, qh)
			if kvcache.Columns(kt) {
				kernels.ScoresQ8_0Cols(sc[j0:j1], 0, qa, ab, 1, kb[colHead(b, kw, kvh, khw):], j0-blk*B, j1-blk*B, hd, nil)
				continue
			}
			for j := j0; j < j1; j++ {
				at := ((b*B+j%B)*kw + kvh*khw) * 2
				sc[j] = a.kDot.Dot(hd, kb[at:at+khw*2], qa)
			}
		}
		scale := a.Scale
		if a.SoftCap > 0 {
			for j := from; j < to; j++ {
				sc[j] = softcap(sc[j]*scale, 1/a.SoftCap, a.SoftCap)
			}
			scale = 1
		}
		sink := float32(math.NaN())
		if a.Sinks != nil {
			sink = a.Sinks[h]
		}
		softmax(sc, nk, scale, sink)
		c.obs(t, h, sc[:nk])
	}
}
