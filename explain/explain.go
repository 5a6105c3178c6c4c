package explain

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/sample"
	"github.com/loom-inference/loom/tokenizer"
)

// Options choose what to look at. Zero values pick the defaults noted.
type Options struct {
	Prompt  string
	Layer   int     // layer whose attention is shown (negative: counted from the end)
	Head    int     // head charted in detail
	Token   int     // query token charted (negative: counted from the end; -1 the last)
	TopK    int     // candidates listed and the top-k cut-off (0: 10)
	TopP    float32 // nucleus cut-off shown (0: 0.9)
	Temp    float32 // sampling temperature (0: greedy)
	Steps   int     // decode steps timed after the prefill (0: none)
	Seed    uint64
	Threads int      // for the machine measurement (0: 1)
	Machine *Machine // roofs to use; measured when nil
	// Spec is the speculative decoding of the timed decode steps (Mode ""
	// or "off": none); the report then shows which tokens were drafted and
	// accepted and which drafts were rejected. The engine must have a
	// draft model for Mode "draft".
	Spec engine.SpecParams
}

// MaxTokens bounds the prompt: the report holds n×n matrices per head and
// the chart must stay readable.
const MaxTokens = 256

// Run evaluates the prompt on e and builds the report: once observed (the
// hooks see every stage), then once timed through the scheduler like any
// request, from an empty prefix cache.
func Run(e *engine.Engine, o Options) (*Report, error) {
	cfg := e.Info()
	if o.TopK <= 0 {
		o.TopK = 10
	}
	if o.TopP <= 0 || o.TopP > 1 {
		o.TopP = 0.9
	}
	if o.Temp < 0 || o.Steps < 0 {
		return nil, errors.New("explain: temperature and steps must not be negative")
	}
	ids := e.Tokenize(o.Prompt, true, false)
	if len(ids) == 0 {
		if e.Vocab().BOS < 0 {
			return nil, errors.New("explain: empty prompt and the vocabulary has no BOS token")
		}
		ids = []int32{e.Vocab().BOS}
	}
	n := len(ids)
	if n > MaxTokens {
		return nil, fmt.Errorf("explain: the prompt is %d tokens; explain shows at most %d", n, MaxTokens)
	}
	cache := e.Cache()
	if n+o.Steps >= cache.Positions { // the token after the last step is chosen too
		return nil, fmt.Errorf("explain: %d prompt tokens + %d steps do not fit the context of %d", n, o.Steps, cache.Positions)
	}
	layer, err := pick("--layer", o.Layer, cfg.NLayers)
	if err != nil {
		return nil, err
	}
	moved := -1 // a recurrent layer has no attention weights to show: the next attention layer's
	if cfg.Recurrent(layer) {
		moved = layer
		for l := range cfg.NLayers {
			if al := (layer + l) % cfg.NLayers; !cfg.Recurrent(al) {
				layer = al
				break
			}
		}
	}
	head, err := pick("--head", o.Head, cfg.NHeads)
	if err != nil {
		return nil, err
	}
	tok, err := pick("--token", o.Token, n)
	if err != nil {
		return nil, err
	}

	r := &Report{Prompt: o.Prompt, Chars: len(o.Prompt)}
	r.Model = modelInfo(e)
	for _, id := range ids {
		r.Tokens = append(r.Tokens, token(e.Vocab(), id))
	}
	r.Positions = positions(cfg, n-1)
	r.Blocks = blocks(cfg, n)
	if moved >= 0 {
		r.Blocks.Notes = append(r.Blocks.Notes, fmt.Sprintf("layer %d is recurrent (no attention weights): the weights shown are layer %d's", moved, layer))
	}
	r.KVCache = kvCache(cfg, cache)
	r.Weights = weights(e.Tensors())

	// Observed prefill: capture X, the chosen layer's attention and the
	// chosen token's residual stream.
	logits, err := observe(e, ids, layer, head, tok, r)
	if err != nil {
		return nil, err
	}
	r.Next, r.Sampling = next(e.Vocab(), logits, o)

	// Timed run without observers: prefill, then the decode steps.
	m := o.Machine
	if m == nil {
		mm := Measure(o.Threads)
		m = &mm
	}
	res, gen, evs, err := timeRun(e, ids, o)
	if err != nil {
		return nil, err
	}
	r.Sampling.Chosen = gen[0]
	if len(gen) > 1 {
		r.Sampling.Generated = gen[:len(gen)-1]
	}
	r.Sampling.Text = e.Vocab().Decode(ids2(r.Sampling.Generated))
	r.Cost = cost(cfg, e.Tensors(), r.KVCache.BytesPerToken, n, len(r.Sampling.Generated), res, *m)
	r.KVCache.Growth = growth(cfg, work(cfg, e.Tensors()), r.KVCache)
	if o.Spec.Mode != "" && o.Spec.Mode != engine.SpecOff {
		r.Speculation = speculation(e.Vocab(), o, evs)
		speculativeCost(&r.Cost, work(cfg, e.Tensors()), r.Speculation)
	}
	return r, nil
}

// speculation groups the timed run's tokens by the forward pass that
// chose them: the drafts a pass accepted (TokenEvent.Drafted), then the
// token the model chose itself after them, with the drafts it rejected.
func speculation(v *tokenizer.Vocab, o Options, evs []engine.TokenEvent) *Speculation {
	sp := &Speculation{Mode: o.Spec.Mode, Max: o.Spec.Max, Min: o.Spec.Min, Fixed: o.Spec.Fixed, Tokens: len(evs)}
	greedy := o.Temp == 0
	var st SpecStep
	for _, ev := range evs {
		t := token(v, ev.ID)
		if ev.Drafted {
			st.Accepted = append(st.Accepted, t)
			sp.Accepted++
			sp.Drafted++
			continue
		}
		st.Token = &t
		sp.Drafted += len(ev.Rejected)
		for _, id := range ev.Rejected {
			st.Rejected = append(st.Rejected, token(v, id))
		}
		sp.Steps = append(sp.Steps, st.explain(len(sp.Steps) == 0, greedy))
		st = SpecStep{}
	}
	if len(st.Accepted) > 0 { // the last pass ended the generation on a draft
		sp.Steps = append(sp.Steps, st.explain(false, greedy))
	}
	return sp
}

// explain says what happened in a step.
func (st SpecStep) explain(prefill, greedy bool) SpecStep {
	choice := "sampled"
	if greedy {
		choice = "most likely"
	}
	switch {
	case prefill:
		st.Why = "from the prompt's logits: a step that evaluates the prompt drafts nothing"
	case st.Token == nil:
		st.Why = fmt.Sprintf("%d drafts accepted; the last one ended the generation", len(st.Accepted))
	case len(st.Rejected) > 0:
		st.Why = fmt.Sprintf("%d of %d drafts accepted; the model's %s token was %s where the draft said %s",
			len(st.Accepted), len(st.Accepted)+len(st.Rejected), choice, quote(st.Token.Piece), quote(st.Rejected[0].Piece))
	case len(st.Accepted) > 0:
		st.Why = fmt.Sprintf("all %d drafts accepted; the model's next token came with the same pass", len(st.Accepted))
	default:
		st.Why = "no drafts: the drafter had no proposal, or drafting did not pay at this step"
	}
	return st
}

// speculativeCost makes the decode's traffic that of the forward passes
// run: the weights are read once per pass, however many tokens it chose,
// and the rejected drafts were computed too.
func speculativeCost(c *Cost, w workModel, sp *Speculation) {
	d := &c.Decode
	passes := len(sp.Steps) - 1 // the first token came from the prompt's pass
	if d.Tokens == 0 || passes <= 0 {
		return
	}
	d.Passes = min(passes, d.Tokens)
	k := float64(d.Tokens)
	d.BytesPerToken -= (w.layerBytes + w.headBytes) * float64(d.Tokens-d.Passes) / k
	d.FLOPsPerToken += (w.layerFLOPs + w.headFLOPs) * float64(sp.Drafted-sp.Accepted) / k
	roofline(c)
}

// pick resolves an index that may count from the end.
func pick(flag string, i, n int) (int, error) {
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return 0, fmt.Errorf("explain: %s %d is out of range (0..%d)", flag, i, n-1)
	}
	return i, nil
}

func token(v *tokenizer.Vocab, id int32) Token {
	t := Token{ID: id, Piece: string(v.Piece(id, true))}
	if int(id) < len(v.Types) {
		switch v.Types[id] {
		case tokenizer.Control, tokenizer.Unknown, tokenizer.Unused:
			t.Special = true
		}
	}
	return t
}

func ids2(ts []Token) []int32 {
	out := make([]int32, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

func modelInfo(e *engine.Engine) ModelInfo {
	c := e.Info()
	mi := ModelInfo{File: e.Path(), Architecture: c.Arch, NLayers: c.NLayers, Dim: c.Dim, NHeads: c.NHeads,
		NKVHeads: c.NKVHeads, HeadDim: c.HeadDim, FFNDim: c.HiddenDim, NVocab: c.NVocab, CtxLen: c.CtxLen,
		RopeTheta: float64(c.RopeBase), TiedOutput: c.TiedOutput}
	for _, t := range e.Tensors() {
		p := int64(1)
		for _, d := range t.Dims {
			p *= int64(d)
		}
		mi.Params += p
	}
	return mi
}

func positions(c engine.ModelInfo, pos int) Positions {
	if c.LearnedPos {
		return Positions{Kind: "learned", HeadDim: c.HeadDim, Style: fmt.Sprintf("X += position_embd[pos]: a learned [%d × %d] table, one row per position (no rotation)", c.CtxLen, c.Dim)}
	}
	p := Positions{Kind: "rope", Base: float64(c.RopeBase), Dims: c.RopeDims, HeadDim: c.HeadDim,
		Scale: float64(c.RopeScale), Style: "interleaved pairs (2i, 2i+1), GGUF/Llama order"}
	if c.RopeNeoX {
		p.Style = "rotate-half pairs (i, i+d/2), NeoX order"
	}
	half := c.RopeDims / 2
	for _, pair := range []int{0, 1, half / 2, half - 1} {
		theta := math.Pow(float64(c.RopeBase), -2*float64(pair)/float64(c.RopeDims)) / float64(c.RopeScale)
		a := RopeAngle{Pos: pos, Pair: pair, Theta: theta, Angle: float64(pos) * theta}
		if len(p.Examples) == 0 || p.Examples[len(p.Examples)-1].Pair < pair {
			p.Examples = append(p.Examples, a)
		}
	}
	return p
}

func blocks(c engine.ModelInfo, n int) Blocks {
	b := Blocks{Count: c.NLayers, Norm: "RMSNorm", Eps: float64(c.Eps),
		Q: []int{n, c.NHeads, c.HeadDim}, K: []int{n, c.NKVHeads, c.HeadDim}, V: []int{n, c.NKVHeads, c.HeadDim},
		GroupSize: c.NHeads / c.NKVHeads, FFNHidden: c.HiddenDim, Activation: "SwiGLU: down(silu(gate·x) ⊙ up·x)",
		QKVBias: c.QKVBias, QKNorm: c.QKNorm,
		Mask: "causal: token i attends to positions 0..i (scores above the diagonal are -inf before softmax)"}
	if c.LayerNorm {
		b.Norm = "LayerNorm" // with bias: (x − mean)/√(var + eps)·w + b
		b.Notes = append(b.Notes, "LayerNorm with bias: (x − mean(x)) / √(var(x) + eps) · w + b (RMSNorm would skip the mean and the bias)")
	}
	switch c.FFN {
	case engine.FFNGELU:
		b.Activation = "GELU MLP: down(gelu(up·x + b)) + b, tanh-form GELU"
	case engine.FFNGeGLU:
		b.Activation = "GeGLU: down(gelu(gate·x) ⊙ up·x), tanh-form GELU"
	}
	if c.EmbedScale {
		b.Notes = append(b.Notes, fmt.Sprintf("embeddings are scaled by √dim = %.4g before the first block", math.Sqrt(float64(c.Dim))))
	}
	if c.PostNorms {
		b.Notes = append(b.Notes, "each block's attention and FFN outputs are RMS-normalized again before the residual add (post-norms)")
	}
	if c.AttnSoftcap > 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("attention scores are soft-capped: s → %g·tanh(s/%g)", c.AttnSoftcap, c.AttnSoftcap))
	}
	if c.FinalSoftcap > 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("output logits are soft-capped: l → %g·tanh(l/%g)", c.FinalSoftcap, c.FinalSoftcap))
	}
	if c.SlidingWindow > 0 {
		which := "every layer"
		switch {
		case c.SlidingLayers != nil:
			which = "layers " + layerList(c.NLayers, c.Sliding) + fmt.Sprintf(" (the others, %s, attend globally)", layerList(c.NLayers, func(l int) bool { return !c.Sliding(l) }))
		case c.SlidingEvery > 1:
			which = fmt.Sprintf("every %d layers from layer 0", c.SlidingEvery)
		}
		b.Notes = append(b.Notes, fmt.Sprintf("sliding-window attention on %s: a token sees the last %d positions", which, c.SlidingWindow))
	}
	if c.RopeBaseSWA > 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("the sliding layers rotate with their own RoPE base %g, unscaled; the global layers with base %g, scaled ×%g", c.RopeBaseSWA, c.RopeBase, c.RopeScale))
	}
	if c.NoRopeEvery > 0 && !c.LearnedPos {
		b.Notes = append(b.Notes, "no RoPE (NoPE) on layers "+layerList(c.NLayers, func(l int) bool { return !c.Rotary(l) })+": their attention sees content only, positions only through the causal mask")
	}
	scale := "1/√head_dim"
	if c.AttnScale != 0 {
		scale = fmt.Sprintf("%g (the file's, instead of 1/√head_dim = %.4g)", c.AttnScale, 1/math.Sqrt(float64(c.HeadDim)))
	}
	if c.QPreScale {
		b.Notes = append(b.Notes, "queries are scaled by "+scale+" before the product (scores are not scaled again)")
	} else if c.AttnScale != 0 {
		b.Notes = append(b.Notes, "attention scores are scaled by "+scale)
	}
	if c.EmbedMul != 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("embeddings are multiplied by %g before the first block", c.EmbedMul))
	}
	if c.ResidualMul != 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("each block's attention and FFN output is multiplied by %g before its residual add", c.ResidualMul))
	}
	if c.LogitDiv != 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("output logits are divided by %g", c.LogitDiv))
	}
	if c.SSMKind != "" {
		b.Notes = append(b.Notes, "hybrid: layers "+layerList(c.NLayers, c.Recurrent)+" are "+recurrentNote(c))
		b.Notes = append(b.Notes, "layers "+layerList(c.NLayers, func(l int) bool { return !c.Recurrent(l) })+" attend over every position (the shapes above are theirs)")
	}
	if c.AttnOutGate {
		b.Notes = append(b.Notes, "each attention head's output is multiplied by sigmoid of a gate its Q projection computes beside its query")
	}
	b.Notes = append(b.Notes, modernNotes(c)...)
	if c.NExperts > 0 {
		b.FFNHidden = c.ExpertHidden
		b.Experts = &Experts{Count: c.NExperts, Used: c.NExpertsUsed, Hidden: c.ExpertHidden,
			Routing: fmt.Sprintf("router logits (ffn_gate_inp·x) → softmax over %d experts → the top %d → their probabilities renormalized to sum 1 → Σ weight·expert(x)", c.NExperts, c.NExpertsUsed)}
	}
	switch {
	case c.NKVHeads == c.NHeads:
		b.Grouping = "MHA: every query head has its own K/V head"
	case c.NKVHeads == 1:
		b.Grouping = fmt.Sprintf("MQA: all %d query heads share one K/V head", c.NHeads)
	default:
		b.Grouping = fmt.Sprintf("GQA: %d query heads share each of %d K/V heads", b.GroupSize, c.NKVHeads)
	}
	return b
}

func kvCache(c engine.ModelInfo, ci engine.CacheInfo) KVCache {
	// Bytes per element of K and V (ci.DType: "q8_0", or "K/V" when they
	// differ): a quantized type's block over its elements (q8_0: 34 bytes
	// per 32), so bpe is their mean.
	kb, vb := typeBytes(ci.DType)
	bpe := (kb + vb) / 2
	// The cache's row is the widest layer's K (or V) width; a layer keeps
	// every position unless it reads another layer's cache (Gemma 4's
	// shared layers) or the pool keeps only its window.
	row, layers, all, slid := 0, 0, 0, 0
	for l := range c.NLayers {
		row = max(row, c.KVHeadsOf(l)*c.HeadDimOf(l))
		switch {
		case c.Recurrent(l):
		case c.KVLayer(l) != l:
		case ci.Window > 0 && c.Sliding(l):
			slid++
			all++
		default:
			layers++
			all++
		}
	}
	per := int64(2 * float64(layers*row) * bpe)
	k := KVCache{DType: ci.DType, BytesPerElement: bpe, BytesPerToken: per, CtxLen: ci.Positions,
		BytesAtCtx: per * int64(ci.Positions), MHABytesPerToken: int64(2 * float64(layers*c.NHeads*c.HeadDim) * bpe),
		Formula: fmt.Sprintf("2 (K,V) × %d layers × %d (KV heads × head_dim) × %.4g bytes", layers, row, bpe)}
	if ci.Window > 0 {
		k.WindowLayers, k.Window, k.WindowBytes = slid, ci.Window, ci.WindowBytes
		k.BytesAtCtx += ci.WindowBytes
	}
	if all != layers || c.KVShared > 0 {
		k.FullBytesAtCtx = int64(2*float64(c.NLayers*row)*bpe) * int64(ci.Positions)
	}
	if ci.StateBytes > 0 {
		for l := range c.NLayers {
			if c.Recurrent(l) {
				k.StateLayers++
			}
		}
		k.StateBytes, k.Checkpoints = ci.StateBytes, ci.StateSlots
		k.BytesAtCtx += ci.StateBytes
		k.AttnOnlyBytesPerToken = int64(2 * float64(c.NLayers*row) * bpe)
	}
	return k
}

// observe runs the prompt once with hooks set and returns the last logits.
func observe(e *engine.Engine, ids []int32, layer, head, tok int, r *Report) ([]float32, error) {
	c := e.Info()
	n := len(ids)
	heads := make([][][]float32, c.NHeads)
	for h := range heads {
		heads[h] = make([][]float32, n)
		for i := range heads[h] {
			heads[h][i] = make([]float32, n) // zeros above the diagonal stay exact
		}
	}
	var resid []float64
	var mu sync.Mutex
	// The hooks index the batch by prompt position: the prompt must be one
	// forward pass (Options.StepTokens ≥ MaxTokens, as by default).
	whole := true
	e.SetHooks(&engine.Hooks{
		Embeddings: func(x []float32) {
			if len(x) != n*c.Dim {
				whole = false
			}
			if !whole {
				return
			}
			row := x[tok*c.Dim : (tok+1)*c.Dim]
			r.Embedding = Embedding{Rows: n, Cols: c.Dim, Row: tok, Values: append([]float32(nil), row[:min(8, c.Dim)]...), Norm: norm(row)}
			resid = append(resid, norm(row))
		},
		Attention: func(l, t, h int, w []float32) {
			if l == layer && whole {
				mu.Lock()
				copy(heads[h][t], w)
				mu.Unlock()
			}
		},
		Residual: func(l int, x []float32) {
			if whole {
				resid = append(resid, norm(x[tok*c.Dim:(tok+1)*c.Dim]))
			}
		},
		Experts: func(l int, sel []int32, w []float32) {
			if r.Blocks.Experts == nil || !whole {
				return
			}
			k := c.NExpertsUsed
			r.Blocks.Experts.Chosen = append(r.Blocks.Experts.Chosen, Routed{Layer: l,
				Experts: append([]int32(nil), sel[tok*k:(tok+1)*k]...), Weights: append([]float32(nil), w[tok*k:(tok+1)*k]...)})
		},
	})
	defer e.SetHooks(nil)
	logits, err := e.NextLogits(context.Background(), ids)
	if err != nil {
		return nil, err
	}
	if !whole {
		return nil, fmt.Errorf("explain: the engine evaluated the %d-token prompt in several forward passes; load it with Options.StepTokens of %d or more", n, n)
	}
	r.Residual = resid
	r.Attention = Attention{Layer: layer, Head: head, Token: tok, Weights: heads[head], Heads: heads}
	// Which earlier tokens the chosen token attends to, averaged over heads.
	avg := make([]float64, tok+1)
	for h := range heads {
		for j := range avg {
			avg[j] += float64(heads[h][tok][j]) / float64(c.NHeads)
		}
	}
	for j, w := range avg {
		r.Attention.Top = append(r.Attention.Top, Attended{Index: j, Piece: r.Tokens[j].Piece, Weight: w})
	}
	sort.SliceStable(r.Attention.Top, func(a, b int) bool { return r.Attention.Top[a].Weight > r.Attention.Top[b].Weight })
	r.Attention.Top = r.Attention.Top[:min(5, len(r.Attention.Top))]
	return logits, nil
}

func norm(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
}

// next ranks the candidates and shows how the cut-offs act on them.
func next(v *tokenizer.Vocab, logits []float32, o Options) ([]Candidate, Sampling) {
	lse1 := sample.LogSumExp(logits)
	temp := float64(o.Temp)
	lseT := lse1
	if o.Temp > 0 {
		lseT = sample.LogSumExpAt(logits, temp)
	} else {
		temp = 1
	}
	p1 := func(id int32) float64 { return math.Exp(float64(logits[id]) - lse1) }
	pt := func(id int32) float64 { return math.Exp(float64(logits[id])/temp - lseT) }
	// The sampler's own steps (llama.cpp's order): top-k, softmax of the
	// survivors at temperature 1, top-p on those, then the temperature.
	top := sample.TopK(logits, o.TopK)
	sample.Softmax(top, 1)
	nucleus := 1
	if o.Temp > 0 {
		nucleus = sample.TopP(top, o.TopP)
	}
	var cands []Candidate
	for i, s := range top {
		c := Candidate{Rank: i + 1, ID: s.ID, Piece: token(v, s.ID).Piece, Logit: s.Logit,
			Prob: p1(s.ID), ProbTemp: pt(s.ID), InTopK: true, InTopP: i < nucleus}
		if o.Temp == 0 {
			c.ProbTemp = 0
			if i == 0 {
				c.ProbTemp = 1
			}
		}
		cands = append(cands, c)
	}
	return cands, Sampling{Temp: o.Temp, TopK: o.TopK, TopP: o.TopP, Seed: o.Seed, Nucleus: nucleus}
}

// timeRun repeats the prefill without observers and from an empty prefix
// cache, then o.Steps decode steps, through the scheduler like any
// request: it asks for o.Steps+1 tokens, so that every step evaluates a
// token (the first comes from the prompt's logits, the last is chosen but
// not evaluated). The result's Prefill and DecodeEval are the times of
// the two phases; gen are the tokens chosen, at least one. End-of-
// generation tokens do not end it: the steps are what is timed.
func timeRun(e *engine.Engine, ids []int32, o Options) (engine.Result, []Token, []engine.TokenEvent, error) {
	e.DropCached()
	spec := o.Spec
	if spec.Mode == "" {
		spec.Mode = engine.SpecOff // not the engine's default: the report says what ran
	}
	req := engine.Request{Tokens: ids, MaxTokens: o.Steps + 1, IgnoreEOS: true, Spec: spec,
		Sample: sample.Params{Temp: o.Temp, TopK: o.TopK, TopP: o.TopP, Seed: o.Seed}}
	streams, err := e.Submit(context.Background(), req)
	if err != nil {
		return engine.Result{}, nil, nil, err
	}
	var evs []engine.TokenEvent
	for ev := range streams[0].Events() {
		if ev.ID >= 0 {
			evs = append(evs, ev)
		}
	}
	res := streams[0].Result()
	if res.FinishReason == engine.FinishError {
		return res, nil, nil, res.Err
	}
	if len(evs) == 0 {
		return res, nil, nil, fmt.Errorf("explain: the timed run generated nothing (%s, %s)", res.FinishReason, res.Detail)
	}
	gen := make([]Token, len(evs))
	for i, ev := range evs {
		gen[i] = token(e.Vocab(), ev.ID)
	}
	return res, gen, evs, nil
}

func weights(ts []engine.TensorInfo) Weights {
	var w Weights
	byName := map[string]*Component{}
	types := map[string]map[string]bool{}
	for _, c := range components {
		byName[c.name] = &Component{Name: c.name}
		types[c.name] = map[string]bool{}
	}
	for _, t := range ts {
		for _, c := range components {
			if !c.match(t.Name) {
				continue
			}
			k := byName[c.name]
			k.Tensors++
			k.Bytes += int64(t.Bytes)
			p := int64(1)
			for _, d := range t.Dims {
				p *= int64(d)
			}
			k.Params += p
			types[c.name][t.Type] = true
			break
		}
		w.TotalBytes += int64(t.Bytes)
	}
	for _, c := range components {
		k := byName[c.name]
		if k.Tensors == 0 {
			continue
		}
		if w.TotalBytes > 0 {
			k.Share = float64(k.Bytes) / float64(w.TotalBytes)
		}
		var ty []string
		for t := range types[c.name] {
			ty = append(ty, t)
		}
		sort.Strings(ty)
		k.Types = strings.Join(ty, ", ")
		w.Components = append(w.Components, *k)
	}
	return w
}

// layerList names the layers of n for which in is true: "0-4, 6-10".
func layerList(n int, in func(int) bool) string {
	var parts []string
	for l := 0; l < n; l++ {
		if !in(l) {
			continue
		}
		e := l
		for e+1 < n && in(e+1) {
			e++
		}
		if e == l {
			parts = append(parts, fmt.Sprint(l))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", l, e))
		}
		l = e
	}
	if parts == nil {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// modernNotes describes what the 2025-26 families add to the block: YaRN,
// attention temperature, sinks, expert gating, Gemma 4's per-layer
// geometry, shared caches, value norm and per-layer inputs.
func modernNotes(c engine.ModelInfo) []string {
	var n []string
	if c.YarnExt != 0 {
		n = append(n, fmt.Sprintf("YaRN RoPE scaling ×%g from an original context of %d: fast-rotating pairs keep their angle, slow ones are interpolated, a ramp between; cos and sin are scaled by %.4g", c.RopeScale, c.YarnOrigCtx, c.YarnAttnFactor*float32(1+0.1*math.Log(float64(c.RopeScale)))))
	} else if c.YarnAttnFactor != 0 && c.YarnAttnFactor != 1 && !c.LearnedPos {
		n = append(n, fmt.Sprintf("RoPE's cos and sin are scaled by %.4g (rope.scaling.attn_factor: the magnitude LongRoPE's 128k models keep attention sharp with)", c.YarnAttnFactor))
	}
	if c.AttnTempScale != 0 {
		n = append(n, fmt.Sprintf("attention temperature: queries × (1 + %g·ln(⌊pos/%d⌋ + 1)), growing with the position", c.AttnTempScale, c.AttnTempFloor))
	}
	if c.Sinks {
		n = append(n, "attention sinks: a learned logit per head joins each softmax's denominator, so a head may attend to nothing")
	}
	if c.ExpertTopKSoftmax {
		n = append(n, "expert weights: the top-k router logits (router with a bias), softmax over those k only; experts with biases and a clamped SwiGLU (gate ≤ 7, |up| ≤ 7)")
	}
	if c.HeadDimSWA > 0 && c.HeadDimSWA != c.HeadDim {
		n = append(n, fmt.Sprintf("sliding layers have heads of %d (rotating %d dims), global layers heads of %d rotating with frequency factors (proportional RoPE)", c.HeadDimSWA, c.RopeDimsSWA, c.HeadDim))
	}
	if c.LayerKVHeads != nil {
		n = append(n, fmt.Sprintf("KV heads per layer: %v", c.LayerKVHeads))
	}
	if c.LayerHidden != nil {
		n = append(n, fmt.Sprintf("FFN width per layer: %v", c.LayerHidden))
	}
	if c.KVShared > 0 {
		first := c.NLayers - c.KVShared
		n = append(n, fmt.Sprintf("layers %d-%d compute no keys or values: each reads the cache of layer %d or %d (the last earlier layer of its kind), so they cost no KV memory", first, c.NLayers-1, c.KVLayer(first), c.KVLayer(c.NLayers-1)))
	}
	if c.VNorm {
		n = append(n, "queries and keys are RMS-normed per head with weights, values without; attention scores are not scaled (scale 1)")
	}
	if c.MoEDense {
		n = append(n, "mixture-of-experts layers run a dense GeGLU FFN beside the experts and add the two (each with its own norms); the router reads rms_norm(x)/√dim times a learned scale")
	}
	if c.PerLayerEmbd > 0 {
		n = append(n, fmt.Sprintf("per-layer inputs: each token carries %d values per layer (its own table row plus a projection of its embedding) that gate a small residual branch at the end of every layer", c.PerLayerEmbd))
	}
	return n
}

// typeBytes is the bytes per element of a cache's K and V types, by the
// name CacheInfo gives ("f16", "q8_0", "q8_0/f16").
func typeBytes(dtype string) (k, v float64) {
	per := map[string]float64{"f32": 4, "f16": 2, "bf16": 2, "q8_0": 34.0 / 32, "q4_0": 18.0 / 32}
	kn, vn, ok := strings.Cut(dtype, "/")
	if !ok {
		vn = kn
	}
	k, v = per[kn], per[vn]
	if k == 0 {
		k = 2
	}
	if v == 0 {
		v = 2
	}
	return k, v
}
