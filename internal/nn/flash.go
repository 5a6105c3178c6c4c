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
	qa  []byte      // [group][actBytes] queries in the key type's vec_dot layout
	acc [][]float32 // [group][HeadDim] running Σ e^(s−M)·v
	sc  [][]float32 // [group][BlockSize] one block's scores, then weights
	m   []float32   // [group] running maxima
	s   []float64   // [group] running Σ e^(s−M)
	vf  []float32   // [HeadDim] one value row, dequantized
	q16 []float32   // [group·HeadDim] F16 queries (transposed F16 keys)
}

func newFlashScratch(group, headDim int) flashScratch {
	f := flashScratch{qa: make([]byte, group*4*headDim), m: make([]float32, group), s: make([]float64, group),
		vf: make([]float32, headDim), q16: make([]float32, group*headDim)}
	for range group {
		f.acc = append(f.acc, make([]float32, headDim))
		f.sc = append(f.sc, make([]float32, kvcache.BlockSize))
	}
	return f
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
	p.RunTask(a.cur.n*a.NKVHeads, 1, flashTask{a})
}

// flashDo computes the (KV head, token) jobs [lo, hi) on worker w.
func (a *Attention) flashDo(w, lo, hi int) {
	c := &a.cur
	const B = kvcache.BlockSize
	hd, qDim := a.HeadDim, a.NHeads*a.HeadDim
	kvDim := a.NKVHeads * a.HeadDim
	if a.RowDim > 0 {
		kvDim = a.RowDim
	}
	group := a.NHeads / a.NKVHeads
	f := &a.flash[w]
	kt, vt := a.Types.K, a.Types.V
	transposed := kvcache.Transposed(kt)
	kw := kvcache.HeadWords(kt, kvDim)                               // words of a key row
	khw, vhw := kvcache.HeadWords(kt, hd), kvcache.HeadWords(vt, hd) // of one head
	ab := a.kDot.ActBytes(hd)
	kb, vb := kvcache.Bytes(c.k), kvcache.Bytes(c.v)
	for job := lo; job < hi; job++ {
		kvh, t := job/c.n, job%c.n
		s := &c.seqs[c.seq[t]]
		p := int(c.pos[t])
		nk := p + 1
		if a.NonCausal {
			nk = len(s.VRows)
		}
		from, to := a.visible(p, nk)
		for g := range group {
			h := kvh*group + g
			qh := c.q[t*qDim+h*hd : t*qDim+(h+1)*hd]
			if transposed {
				// ggml_vec_dot_f16 on f16(q): the exact kernel's one-token order.
				q16 := f.q16[g*hd : (g+1)*hd]
				copy(q16, qh)
				kernels.RoundF16s(q16)
			} else {
				a.kDot.Quantize(f.qa[g*ab:(g+1)*ab], qh)
			}
			f.m[g], f.s[g] = float32(math.Inf(-1)), 0
			if a.Sinks != nil { // a sink joins the sum with no value
				f.m[g], f.s[g] = a.Sinks[h], 1
			}
			clear(f.acc[g])
		}
		for blk := from / B; blk*B < to; blk++ {
			j0, j1 := max(from, blk*B), min(to, (blk+1)*B)
			b := int(s.Blocks[blk])
			// Scores of the block's visible positions, per query head;
			// four heads at a time share each row's unpacking (Dot4).
			g4 := 0
			if !transposed && a.kDot.Dot4 != nil {
				var o4 [4]float32
				for ; g4+4 <= group; g4 += 4 {
					qa := f.qa[g4*ab:]
					for j := j0; j < j1; j++ {
						at := ((b*B+j%B)*kw + kvh*khw) * 2
						a.kDot.Dot4(hd, kb[at:at+khw*2], qa, ab, o4[:])
						for i, x := range o4 {
							f.sc[g4+i][j-j0] = x
						}
					}
				}
			}
			for g := g4; g < group; g++ {
				sc := f.sc[g][:j1-j0]
				if transposed {
					var full [B]float32
					ks := c.k[kvcache.KRow(int32(b), kvDim, kvh*hd):]
					kernels.ScoresF16(full[:], f.q16[g*hd:(g+1)*hd], ks, a.koff, kernels.OrderVecDot)
					copy(sc, full[j0-blk*B:j1-blk*B])
					continue
				}
				qa := f.qa[g*ab : (g+1)*ab]
				for j := j0; j < j1; j++ {
					at := ((b*B+j%B)*kw + kvh*khw) * 2
					sc[j-j0] = a.kDot.Dot(hd, kb[at:at+khw*2], qa)
				}
			}
			// The online softmax: scale (and cap), raise the maximum,
			// rescale the sums so far, weigh the block.
			for g := range group {
				sc := f.sc[g][:j1-j0]
				mx := f.m[g]
				for j, x := range sc {
					x *= a.Scale
					if a.SoftCap > 0 {
						x = softcap(x, 1/a.SoftCap, a.SoftCap)
					}
					sc[j] = x
					mx = max(mx, x)
				}
				if mx > f.m[g] {
					if !math.IsInf(float64(f.m[g]), -1) {
						r := libm.Expf(f.m[g] - mx)
						kernels.ScaleF32(f.acc[g], r)
						f.s[g] *= float64(r)
					}
					f.m[g] = mx
				}
				f.s[g] += kernels.ExpSum(sc, sc, f.m[g])
			}
			// Values: each row dequantized once for the group.
			for j := j0; j < j1; j++ {
				at := (int(s.VRows[j]) + kvh*vhw) * 2
				row := vb[at : at+vhw*2]
				if vt == tensor.F16 {
					kernels.F16ToF32s(f.vf, row)
				} else {
					a.vDot.Dequant(f.vf, row)
				}
				for g := range group {
					kernels.MadF32(f.acc[g], f.vf, f.sc[g][j-j0])
				}
			}
		}
		for g := range group {
			h := kvh*group + g
			o := c.out[t*qDim+h*hd : t*qDim+(h+1)*hd]
			inv := float32(0)
			if f.s[g] > 0 {
				inv = float32(1 / f.s[g])
			}
			for i, x := range f.acc[g] {
				o[i] = x * inv
			}
		}
		if c.obs != nil {
			a.observeFlash(w, t, kvh, s, from, to, nk)
		}
	}
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
				var full [B]float32
				kernels.ScoresF16(full[:], q16, c.k[kvcache.KRow(int32(b), kvDim, kvh*hd):], a.koff, kernels.OrderVecDot)
				copy(sc[j0:j1], full[j0-blk*B:j1-blk*B])
				continue
			}
			qa := f.qa[g*ab : (g+1)*ab]
			a.kDot.Quantize(qa, qh)
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
