package explain

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteText renders the report for a terminal, one section per stage.
func (r *Report) WriteText(w io.Writer) error {
	p := &printer{w: w}
	m := r.Model
	p.f("%s — %s, %d layers, dim %d, %d heads (%d KV), head_dim %d, ffn %d, vocab %d, ctx %d, %s params\n",
		m.File, m.Architecture, m.NLayers, m.Dim, m.NHeads, m.NKVHeads, m.HeadDim, m.FFNDim, m.NVocab, m.CtxLen, count(float64(m.Params)))

	p.section("1. Tokens")
	cpt := float64(r.Chars) / float64(len(r.Tokens))
	p.f("  %q → %d tokens (%.2f characters per token)\n", r.Prompt, len(r.Tokens), cpt)
	p.f("  %4s  %7s  %s\n", "#", "id", "piece")
	for i, t := range r.Tokens {
		mark := ""
		if t.Special {
			mark = "  [special]"
			if i == 0 {
				mark = "  [BOS]"
			}
		}
		p.f("  %4d  %7d  %s%s\n", i, t.ID, quote(t.Piece), mark)
	}

	p.section("2. Embeddings and positions")
	e := r.Embedding
	p.f("  X = token_embd[ids]: shape [%d × %d] (tokens × dim), one row per token\n", e.Rows, e.Cols)
	p.f("  row %d (%s): [%s …]  ‖x‖ = %.4g\n", e.Row, quote(r.Tokens[e.Row].Piece), floats(e.Values), e.Norm)
	ps := r.Positions
	if ps.Kind == "learned" {
		p.f("  positions: learned, %s\n", ps.Style)
	} else {
		p.f("  positions: RoPE (no position vectors are added): each head's first %d of %d dims are rotated in\n", ps.Dims, ps.HeadDim)
		p.f("  %s, pair i by angle pos·θ_i with θ_i = %g^(-2i/%d)", ps.Style, ps.Base, ps.Dims)
		if ps.Scale != 1 {
			p.f(" / %g", ps.Scale)
		}
		p.f(":\n")
		for _, a := range ps.Examples {
			p.f("    pos %d, pair %2d: θ = %.6g rad/pos → angle %.6g rad\n", a.Pos, a.Pair, a.Theta, a.Angle)
		}
	}

	p.section("3. Transformer blocks")
	b := r.Blocks
	p.f("  %d blocks: x += attn(%s(x)); x += ffn(%s(x))   (eps %.3g)\n", b.Count, b.Norm, b.Norm, b.Eps)
	p.f("  Q %v  K %v  V %v  [tokens, heads, head_dim]\n", b.Q, b.K, b.V)
	p.f("  %s\n", b.Grouping)
	if b.QKVBias {
		p.f("  Q, K, V projections carry biases\n")
	}
	if b.QKNorm {
		p.f("  Q and K are RMS-normalized per head before RoPE\n")
	}
	for _, n := range b.Notes {
		p.f("  %s\n", n)
	}
	p.f("  mask: %s\n", b.Mask)
	p.f("  FFN: %d → %d → %d, %s\n", m.Dim, b.FFNHidden, m.Dim, b.Activation)
	if x := b.Experts; x != nil {
		p.f("  mixture of experts: %d experts of width %d, %d per token; %s\n", x.Count, x.Hidden, x.Used, x.Routing)
		p.f("  experts chosen for token %d %s, per layer (weight):\n", r.Attention.Token, quote(r.Tokens[r.Attention.Token].Piece))
		for _, c := range x.Chosen {
			p.f("    layer %2d:", c.Layer)
			for i, e := range c.Experts {
				p.f("  expert %d (%.3f)", e, c.Weights[i])
			}
			p.f("\n")
		}
	}
	a := r.Attention
	p.f("\n  attention weights, layer %d head %d (row: query token, column: key token; · masked):\n", a.Layer, a.Head)
	p.matrix(a.Weights, r.Tokens, a.Token)
	p.f("\n  token %d %s attends to (layer %d, head %d):\n", a.Token, quote(r.Tokens[a.Token].Piece), a.Layer, a.Head)
	for j := 0; j <= a.Token; j++ {
		wt := float64(a.Weights[a.Token][j])
		p.f("    %-14s | %-30s (%.3f)\n", clip(quote(r.Tokens[j].Piece), 14), strings.Repeat("#", int(wt*30+0.5)), wt)
	}
	p.f("  most attended by token %d, averaged over the %d heads of layer %d:", a.Token, len(a.Heads), a.Layer)
	for _, t := range a.Top {
		p.f("  %d %s (%.3f)", t.Index, quote(t.Piece), t.Weight)
	}
	p.f("\n  residual stream ‖x‖ of token %d: embedding %.3g", a.Token, r.Residual[0])
	for i, v := range r.Residual[1:] {
		if i < 6 || i >= len(r.Residual)-4 {
			p.f(" → %.3g", v)
		} else if i == 6 {
			p.f(" → …")
		}
	}
	p.f("\n")

	p.section("4. Next token")
	s := r.Sampling
	p.f("  logits → probabilities: p = softmax(logits / T); T = 1 and T = %g; top-k %d, top-p %g\n", s.Temp, s.TopK, s.TopP)
	p.f("  %4s  %7s  %-16s %9s %9s %9s  %s\n", "rank", "id", "piece", "logit", "p(T=1)", fmt.Sprintf("p(T=%g)", s.Temp), "cut-offs")
	for _, c := range r.Next {
		cut := "top-k"
		if c.InTopP {
			cut += ", top-p"
		}
		p.f("  %4d  %7d  %-16s %9.4f %9.4f %9.4f  %-13s %s\n", c.Rank, c.ID, clip(quote(c.Piece), 16), c.Logit, c.Prob, c.ProbTemp, cut,
			strings.Repeat("#", int(c.Prob*30+0.5)))
	}
	how := fmt.Sprintf("sampled (seed %d) from the %d tokens top-k and top-p keep", s.Seed, s.Nucleus)
	if s.Temp == 0 {
		how = "greedy (T = 0): the highest logit"
	}
	p.f("  chosen: %d %s, %s\n", s.Chosen.ID, quote(s.Chosen.Piece), how)
	if len(s.Generated) > 0 {
		p.f("  %d decode steps: %s\n", len(s.Generated), quote(s.Text))
	}
	if sp := r.Speculation; sp != nil {
		p.speculation(sp)
	}

	p.section("5. KV cache")
	k := r.KVCache
	p.f("  per token: %s = %s\n", k.Formula, bytesStr(float64(k.BytesPerToken)))
	if k.Window > 0 {
		p.f("  the %d sliding-window layers keep only their window of %d positions (with slack and a step's tokens): %s per sequence, whatever its length\n",
			k.WindowLayers, k.Window, bytesStr(float64(k.WindowBytes)))
	}
	if k.StateLayers > 0 {
		p.f("  the %d recurrent layers keep no K/V: a state of %s per sequence, whatever its length (the pool has %d state slots: live states and checkpoints for prefix reuse)\n",
			k.StateLayers, bytesStr(float64(k.StateBytes)), k.Checkpoints)
	}
	p.f("  at the full context of %d tokens: %s\n", k.CtxLen, bytesStr(float64(k.BytesAtCtx)))
	if len(k.Growth) > 0 {
		p.f("  as the context grows, one sequence's cache and one token's work, beside the same shape with attention on every layer (%s per token):\n", bytesStr(float64(k.AttnOnlyBytesPerToken)))
		p.f("    %8s  %12s %12s   %12s %12s\n", "context", "cache", "all-attn", "FLOPs/token", "all-attn")
		for _, g := range k.Growth {
			p.f("    %8d  %12s %12s   %12s %12s\n", g.Ctx, bytesStr(float64(g.Bytes)), bytesStr(float64(g.AttnOnlyBytes)), count(g.FLOPs), count(g.AttnOnlyFLOPs))
		}
	}
	if k.FullBytesAtCtx > 0 {
		p.f("  (every layer keeping every position of its own would take %s: %.1f× more; %s per token against %s)\n", bytesStr(float64(k.FullBytesAtCtx)),
			float64(k.FullBytesAtCtx)/float64(k.BytesAtCtx), bytesStr(float64(k.BytesAtCtx)/float64(k.CtxLen)), bytesStr(float64(k.FullBytesAtCtx)/float64(k.CtxLen)))
	}
	if k.MHABytesPerToken != k.BytesPerToken {
		p.f("  with one K/V head per query head (MHA) it would be %s per token: GQA saves %.0f%%\n",
			bytesStr(float64(k.MHABytesPerToken)), 100*(1-float64(k.BytesPerToken)/float64(k.MHABytesPerToken)))
	}

	p.section("6. Cost")
	c := r.Cost
	mc := c.Machine
	if mc.CPU != "" {
		p.f("  cpu: %s\n", mc.CPU)
	}
	p.f("  machine: %.1f GB/s, %.1f GFLOP/s (%s)\n", mc.BandwidthGBs, mc.PeakGFLOPS, mc.Method)
	pf := c.Prefill
	p.f("  prefill: %d tokens in one batch, %.2f ms (%.1f tok/s): %s FLOPs, %s read, %.1f FLOP/byte → %.1f GFLOP/s\n",
		pf.Tokens, pf.Seconds*1e3, pf.TokS, count(pf.FLOPs), bytesStr(pf.Bytes), pf.Intensity, pf.GFLOPS)
	if d := c.Decode; d.Tokens > 0 && d.Passes > 0 {
		p.f("  decode:  %d tokens in %d forward passes (speculative decoding), %.2f ms per token (%.1f tok/s; drafting not included)\n",
			d.Tokens, d.Passes, d.Seconds/float64(d.Tokens)*1e3, d.TokS)
	} else if d.Tokens > 0 {
		p.f("  decode:  %d tokens, one at a time, %.2f ms each (%.1f tok/s)\n", d.Tokens, d.Seconds/float64(d.Tokens)*1e3, d.TokS)
	}
	if d := c.Decode; d.Tokens > 0 {
		p.f("           per token %s FLOPs over %s read: %.2f FLOP/byte → %.1f GB/s, %.1f GFLOP/s\n",
			count(d.FLOPsPerToken), bytesStr(d.BytesPerToken), d.Intensity, d.GBs, d.GFLOPS)
		p.f("           roofline: %s-bound at this intensity (ridge at %.1f FLOP/byte); the roof allows %.1f tok/s, this run reaches %.0f%%\n",
			d.Bound, mc.PeakGFLOPS/mc.BandwidthGBs, d.RoofTokS, 100*d.RoofFraction)
	} else {
		p.f("  decode:  no steps (--steps N times N decode steps)\n")
	}

	p.section("7. Where the bytes are")
	wt := r.Weights
	for _, co := range wt.Components {
		p.f("  %-11s %10s  %5.1f%%  %3d tensors  %9s params  %s\n", co.Name, bytesStr(float64(co.Bytes)), 100*co.Share, co.Tensors, count(float64(co.Params)), co.Types)
	}
	p.f("  %-11s %10s\n", "total", bytesStr(float64(wt.TotalBytes)))
	return p.err
}

// speculation lists the timed run's forward passes: accepted drafts
// (+), the model's own token (→) and the rejected drafts (✗).
func (p *printer) speculation(sp *Speculation) {
	rate := 0.0
	if sp.Drafted > 0 {
		rate = 100 * float64(sp.Accepted) / float64(sp.Drafted)
	}
	how := "adaptive: it drafts while its acceptance so far makes drafts pay"
	if sp.Fixed {
		how = "fixed"
	}
	p.f("\n  speculative decoding (%s, at most %d drafts per step, %s): %d tokens in %d forward passes;\n",
		sp.Mode, sp.Max, how, sp.Tokens, len(sp.Steps))
	p.f("  %d tokens drafted, %d accepted (%.0f%%); the output is what decoding without drafts gives, token for token\n", sp.Drafted, sp.Accepted, rate)
	p.f("  %4s  %s\n", "pass", "+ accepted draft   → the model's own token   ✗ rejected drafts")
	for i, st := range sp.Steps {
		var b strings.Builder
		for _, t := range st.Accepted {
			b.WriteString("+" + quote(t.Piece) + " ")
		}
		if st.Token != nil {
			b.WriteString("→" + quote(st.Token.Piece))
		}
		if len(st.Rejected) > 0 {
			b.WriteString("  ✗")
			for j, t := range st.Rejected {
				if j > 0 {
					b.WriteString(" ")
				}
				b.WriteString(quote(t.Piece))
			}
		}
		if len(st.Accepted) == 0 && len(st.Rejected) == 0 { // nothing drafted: one line
			p.f("  %4d  %-24s (%s)\n", i, b.String(), strings.SplitN(st.Why, ":", 2)[0])
			continue
		}
		p.f("  %4d  %s\n        %s\n", i, b.String(), st.Why)
	}
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *printer) section(title string) {
	p.f("\n── %s %s\n", title, strings.Repeat("─", max(0, 70-len(title))))
}

// matrix prints an attention matrix, a window of at most 12 tokens ending
// at the focused one when the prompt is longer.
func (p *printer) matrix(w [][]float32, toks []Token, focus int) {
	hi := max(focus+1, min(len(w), 12))
	lo := max(0, hi-12)
	p.f("  %10s", "")
	for j := lo; j < hi; j++ {
		p.f(" %6s", clip(plain(toks[j].Piece), 6))
	}
	p.f("\n")
	for i := lo; i < hi; i++ {
		p.f("  %10s", clip(plain(toks[i].Piece), 10))
		for j := lo; j < hi; j++ {
			if j > i {
				p.f(" %6s", "·")
			} else {
				p.f(" %6.3f", w[i][j])
			}
		}
		p.f("\n")
	}
	if lo > 0 {
		p.f("  (tokens %d..%d of %d shown)\n", lo, hi-1, len(w))
	}
}

func quote(s string) string { return strconv.Quote(s) }

// plain is a short label: spaces shown as ␣, control bytes escaped.
func plain(s string) string {
	q := strconv.Quote(s)
	return strings.ReplaceAll(q[1:len(q)-1], " ", "␣")
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func floats(v []float32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(float64(x), 'f', 4, 32)
	}
	return strings.Join(s, ", ")
}

func count(x float64) string {
	switch {
	case x >= 1e12:
		return fmt.Sprintf("%.2fT", x/1e12)
	case x >= 1e9:
		return fmt.Sprintf("%.2fG", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

func bytesStr(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
