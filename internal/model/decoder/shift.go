package decoder

import (
	"errors"

	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/nn"
)

// Context shift (llama.cpp's --context-shift): the cache drops positions
// [keep, keep+d) and moves the later ones back (kvcache.Seq.Shift); their
// keys were rotated for their old positions, so each is rotated by −d
// more, as llama.cpp's K-shift does (ggml_rope_ext over the cache with
// the position deltas): RoPE's angle is linear in the position, so the
// rotation by −d composes with the one by p (YaRN's ramp and frequency
// factors included), but for rounding: the key is read back from its type,
// rotated in float32 and stored again.

// ErrNoShift is returned for a model whose keys Shift cannot re-rotate.
var ErrNoShift = errors.New("this model's family does not support context shift")

// shiftRoper is a net whose attention layers rotate keys with one of
// Weights' embeddings: the one Shift re-rotates layer l's keys with.
type shiftRoper interface {
	shiftRope(l int) *nn.RoPE
}

func (m *PreNorm) shiftRope(int) *nn.RoPE { return &m.Rope }

func (m *PostNorm) shiftRope(l int) *nn.RoPE {
	if m.Cfg.RopeBaseSWA > 0 && m.Cfg.Sliding(l) {
		return &m.RopeSWA
	}
	return &m.Rope
}

// Shift drops positions [keep, keep+d) of seq and re-rotates the keys
// that move back.
func (r *Runner) Shift(seq *kvcache.Seq, keep, d int) error {
	c := r.cfg
	sr, ok := r.net.(shiftRoper)
	if !ok || c.LearnedPos || c.AttnTempScale != 0 || c.RopeStill != nil {
		return ErrNoShift
	}
	n := seq.Len()
	if err := seq.Shift(keep, d); err != nil {
		return err
	}
	pool := seq.Pool()
	k := make([]float32, pool.KVDim)
	for l := range c.NLayers {
		if c.Recurrent(l) || c.KVLayer(l) != l || !c.Rotary(l) {
			continue
		}
		rope := *sr.shiftRope(l)
		rope.MScale = 1 // a rotation only: the magnitude scale is in the key already
		cs := make([]float32, rope.Dims)
		rope.Angles(cs, -d)
		kv, hd := c.KVDimOf(l), c.HeadDimOf(l)
		for p := keep; p < n-d; p++ {
			at := seq.Slot(p)
			pool.Key(l, at, k[:kv])
			rope.Apply(k[:kv], hd, cs)
			pool.SetKey(l, at, k[:kv])
		}
	}
	return nil
}
