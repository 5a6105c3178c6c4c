package decoder

import (
	"fmt"
	"math"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/nn"
)

// Weights are what every family's model holds: its config, the head, the
// rotary embedding and the layers. A family's Model embeds them and adds
// its forward pass; the weights are immutable once bound, shared by every
// runner and sequence.
type Weights struct {
	Cfg  model.Config
	Head Head
	Rope nn.RoPE // rotary embedding (unused with learned positions)
	// RopeSWA is the sliding-window layers' own rotary embedding when the
	// family has one (Config.RopeBaseSWA: another base, unscaled, no
	// per-dimension factors — Gemma 3's local layers).
	RopeSWA nn.RoPE
	Layers  []Layer
	Pool    PoolHead // an embedding model's head after pooling (empty for the others)
}

// LayerBinder binds block i's weights (tensor names prefixed p = "blk.i.").
type LayerBinder func(b *model.Binder, c *model.Config, p string, i int) Layer

// Bind validates cfg and binds the head (final LayerNorm when
// cfg.LayerNorm), RoPE with its optional per-dimension factors
// (rope_freqs.weight, or LongRoPE's rope_factors_long/short.weight as the
// context picks) unless cfg.LearnedPos, and each layer with layer.
// extra binds what else the family has (nil: nothing). Every multiplied
// weight is then packed.
func Bind(cfg *model.Config, src model.Source, layer LayerBinder, extra func(b *model.Binder, c *model.Config)) (Weights, error) {
	if err := cfg.Validate(); err != nil {
		return Weights{}, err
	}
	// Nothing is allocated per layer for layers the weights do not have.
	if err := model.CheckLayers(src, cfg.NLayers, "block_count"); err != nil {
		return Weights{}, err
	}
	w := Weights{Cfg: *cfg}
	c := &w.Cfg
	b := &model.Binder{Src: src}
	w.Head = BindHead(b, c, c.LayerNorm)
	if !c.LearnedPos {
		w.Rope = nn.RoPE{Dims: c.RopeDims, Base: c.RopeBase, FreqScale: c.FreqScale(), NeoX: c.RopeNeoX}
		w.Rope.Factors = b.OptVector("rope_freqs.weight", c.RopeDims/2)
		// LongRoPE: the long factors when the context exceeds the
		// original one, else the short (llama.cpp's get_rope_factors;
		// rope_freqs wins, a missing one leaves the angles undivided).
		long, short := b.OptVector("rope_factors_long.weight", c.RopeDims/2), b.OptVector("rope_factors_short.weight", c.RopeDims/2)
		if w.Rope.Factors == nil && (long != nil || short != nil) {
			w.Rope.Factors, c.LongRope = short, "short"
			if c.LongRopeCtx() {
				w.Rope.Factors, c.LongRope = long, "long"
			}
			if w.Rope.Factors == nil {
				c.LongRope = ""
			}
		}
		if c.RopeStill != nil { // θ/∞ = 0: cos 1, sin 0, the pair unchanged
			if w.Rope.Factors == nil {
				w.Rope.Factors = make([]float32, c.RopeDims/2)
				for i := range w.Rope.Factors {
					w.Rope.Factors[i] = 1
				}
			}
			for i, still := range c.RopeStill {
				if still {
					w.Rope.Factors[i] = float32(math.Inf(1))
				}
			}
		}
		if y := c.Yarn; y.ExtFactor != 0 || (y.AttnFactor != 0 && y.AttnFactor != 1) {
			w.Rope.Yarn(y.ExtFactor, y.AttnFactor, y.BetaFast, y.BetaSlow, y.OrigCtx)
		}
		if c.RopeBaseSWA > 0 {
			dims := c.RopeDims
			if c.RopeDimsSWA > 0 {
				dims = c.RopeDimsSWA
			}
			w.RopeSWA = nn.RoPE{Dims: dims, Base: c.RopeBaseSWA, FreqScale: 1, NeoX: c.RopeNeoX}
		}
	}
	for i := range c.NLayers {
		w.Layers = append(w.Layers, layer(b, c, fmt.Sprintf("blk.%d.", i), i))
		if b.Err != nil { // a source that cannot list its tensors stops at the first missing one
			break
		}
	}
	if extra != nil {
		extra(b, c)
	}
	w.Pool = BindPoolHead(b, c)
	if b.Err != nil {
		return Weights{}, b.Err
	}
	kernels.PackAll(w.Matrices())
	return w, nil
}

// Config implements model.Model.
func (w *Weights) Config() *model.Config { return &w.Cfg }

// Matrices lists every weight that is multiplied: the LM head, then each
// layer's (for packing, scratch sizes, and loom bench's kernel report).
func (w *Weights) Matrices() []*kernels.Matrix {
	return w.Pool.matrices(Matrices(w.Head.Matrices(), w.Layers))
}

// LMHead implements Net.
func (w *Weights) LMHead() *kernels.Matrix { return w.Head.Output }

// PoolHead implements Net.
func (w *Weights) PoolHead() *PoolHead { return &w.Pool }
