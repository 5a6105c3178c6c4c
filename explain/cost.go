package explain

import (
	"strings"

	"github.com/loom-inference/loom/engine"
)

// The cost section: time, work and traffic per phase against the
// machine's roofline, from a model of one token's work.

// cost is the work and traffic of a run of n prompt tokens and steps
// decode steps whose times t holds (Prefill, and DecodeEval: the decode
// steps' forward passes), placed on the roofline of m (its compute roof
// the one for the model's weights: Machine.For). Everything it needs is
// the model's shape and tensor table: a model need not run to be placed.
func cost(c engine.ModelInfo, ts []engine.TensorInfo, kvPerToken int64, n, steps int, t engine.Result, m Machine) Cost {
	w := work(c, ts)
	var cost Cost
	cost.Machine = m.For(quantized(ts))
	cost.Prefill = Phase{Tokens: n, Seconds: t.Prefill.Seconds()}
	cost.Prefill.FLOPs = float64(n)*w.layerFLOPs + w.headFLOPs + w.attnFLOPsUpTo(n)
	cost.Prefill.Bytes = w.layerBytes + w.headBytes + float64(n)*(w.embRow+float64(kvPerToken))
	var flops, bytes float64
	for step := range steps {
		ctx := n + step + 1
		flops += w.layerFLOPs + w.headFLOPs + w.attnFLOPs(ctx)
		bytes += w.layerBytes + w.headBytes + w.embRow + float64(ctx)*float64(kvPerToken)
	}
	if steps > 0 {
		k := float64(steps)
		cost.Decode = Decode{Tokens: steps, Seconds: t.DecodeEval.Seconds(), FLOPsPerToken: flops / k, BytesPerToken: bytes / k}
	}
	roofline(&cost)
	return cost
}

// quantized reports whether most of the bytes of the weights multiplied
// (the 2-D tensors) are in a quantized type rather than F32, F16 or BF16.
func quantized(ts []engine.TensorInfo) bool {
	var q, f int64
	for _, t := range ts {
		if len(t.Dims) < 2 {
			continue
		}
		switch strings.ToUpper(t.Type) {
		case "F32", "F16", "BF16", "F64":
			f += int64(t.Bytes)
		default:
			q += int64(t.Bytes)
		}
	}
	return q > f
}

// roofline fills the derived rates and places each phase under the roofs.
func roofline(c *Cost) {
	p := &c.Prefill
	if p.Seconds > 0 {
		p.TokS = float64(p.Tokens) / p.Seconds
		p.GFLOPS = p.FLOPs / p.Seconds / 1e9
	}
	if p.Bytes > 0 {
		p.Intensity = p.FLOPs / p.Bytes
	}
	d := &c.Decode
	if d.Tokens == 0 || d.Seconds <= 0 {
		return
	}
	d.TokS = float64(d.Tokens) / d.Seconds
	d.GBs = d.BytesPerToken * d.TokS / 1e9
	d.GFLOPS = d.FLOPsPerToken * d.TokS / 1e9
	d.Intensity = d.FLOPsPerToken / d.BytesPerToken
	d.Bound, d.RoofTokS = bound(c.Machine, d.FLOPsPerToken, d.BytesPerToken)
	d.RoofFraction = d.TokS / d.RoofTokS
}

// bound places a token's work under m's roofs: the tok/s each allows
// (bandwidth / bytes, peak / FLOPs), and which is lower.
func bound(m Machine, flops, bytes float64) (string, float64) {
	memRoof := m.BandwidthGBs * 1e9 / bytes
	cmpRoof := m.PeakGFLOPS * 1e9 / flops
	if cmpRoof < memRoof {
		return "compute", cmpRoof
	}
	return "memory", memRoof
}

// workModel counts the FLOPs and bytes of one forward pass from the tensor
// table: every 2-D weight except the embedding table is a matrix×vector
// per token (2 FLOPs per element), the embedding table contributes one row
// per token (and the LM head when tied).
type workModel struct {
	layerFLOPs, layerBytes float64 // per token, all blocks (matrices + norms)
	headFLOPs, headBytes   float64 // LM head (+ final norm) for one token
	embRow                 float64 // bytes of one embedding row
	attnPerPos             float64 // FLOPs per (token, visible position): QK and PV over all attention layers and heads
	stateFLOPs             float64 // per token, the recurrent layers' state updates (in layerFLOPs)
	stateBytes             float64 // per token, their states read and written (in layerBytes)
}

func (w workModel) attnFLOPs(ctx int) float64 { return w.attnPerPos * float64(ctx) }

// attnFLOPsUpTo is Σ_{t<n} attnFLOPs(t+1): the causal prefill's triangle.
func (w workModel) attnFLOPsUpTo(n int) float64 { return w.attnPerPos * float64(n) * float64(n+1) / 2 }

func work(c engine.ModelInfo, ts []engine.TensorInfo) workModel {
	var w workModel
	attn := 0
	for l := range c.NLayers {
		if !c.Recurrent(l) {
			attn++
		} else {
			w.stateFLOPs += stateFLOPs(c)
		}
		if c.Recurrent(l) {
			w.stateBytes += 2 * 4 * float64(c.StateElems[l]) // read and written, F32
		}
	}
	w.attnPerPos = float64(4 * attn * c.NHeads * c.HeadDim)
	w.layerFLOPs, w.layerBytes = w.stateFLOPs, w.stateBytes
	for _, t := range ts {
		el := 1.0
		for _, d := range t.Dims {
			el *= float64(d)
		}
		by := float64(t.Bytes)
		switch {
		case t.Name == "token_embd.weight":
			w.embRow = by / float64(c.NVocab)
			if c.TiedOutput {
				w.headFLOPs += 2 * el
				w.headBytes += by
			}
		case t.Name == "output.weight":
			w.headFLOPs += 2 * el
			w.headBytes += by
		case t.Name == "output_norm.weight":
			w.headBytes += by
		case strings.HasPrefix(t.Name, "blk."):
			if len(t.Dims) == 2 {
				w.layerFLOPs += 2 * el
			}
			w.layerBytes += by
		}
	}
	return w
}

// components groups tensors by what they do; the first matching rule wins.
var components = []struct {
	name  string
	match func(name string) bool
}{
	{"embeddings", func(n string) bool {
		return strings.HasPrefix(n, "token_embd") || strings.HasPrefix(n, "position_embd")
	}},
	{"norms", func(n string) bool { return strings.Contains(n, "_norm") }},
	{"attention", func(n string) bool { return strings.Contains(n, ".attn_") }},
	{"ffn", func(n string) bool { return strings.Contains(n, ".ffn_") }},
	{"head", func(n string) bool { return strings.HasPrefix(n, "output.") }},
	{"positions", func(n string) bool { return strings.HasPrefix(n, "rope_") }},
	{"other", func(string) bool { return true }},
}
