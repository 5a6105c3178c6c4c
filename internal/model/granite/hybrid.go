package granite

import (
	"fmt"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

// Granite 4.0-H (llama.cpp's granitehybrid): Granite's four multipliers
// over a hybrid of Mamba-2 layers (decoder.Mamba2, a state per sequence)
// and attention layers, NoPE when rope.scaling.finetuned is false, as the
// converter writes it. A layer is Mamba-2 when its
// attention.head_count_kv entry is 0. The FFN is a mixture of experts
// with an ungated shared expert (Tiny, Small) or a dense SwiGLU (Micro).

func init() {
	model.Register(model.Arch{Name: "granitehybrid", Meta: hybridMeta, Tweak: func(*model.Config) {}, Build: NewHybrid, Experts: true})
}

// hybridMeta reads Granite's multipliers, then the Mamba-2 geometry
// (ssm.*, with llama.cpp's constraints: inner_size = 2·embedding_length,
// heads and groups dividing it).
func hybridMeta(f *gguf.File, c *model.Config) error {
	if err := meta(f, c); err != nil {
		return err
	}
	if err := model.ReadSSM(f, c); err != nil {
		return err
	}
	g := &c.SSM
	g.Kind = model.Mamba2
	key := func(k string) string { return c.Arch + "." + k }
	switch {
	case g.Inner != 2*c.Dim:
		return fmt.Errorf("model: %s = %d is not twice %s = %d (llama.cpp requires it)", key("ssm.inner_size"), g.Inner, key("embedding_length"), c.Dim)
	case g.Inner%g.DtRank != 0 || g.DtRank%g.Groups != 0:
		return fmt.Errorf("model: %s = %d heads over %s = %d channels in %s = %d groups do not divide evenly",
			key("ssm.time_step_rank"), g.DtRank, key("ssm.inner_size"), g.Inner, key("ssm.group_count"), g.Groups)
	}
	elems := decoder.Mamba2StateElems(c)
	if elems > model.MaxStateElems {
		return fmt.Errorf("model: a Mamba-2 state of %d values (%s) is over the limit of %d", elems, key("ssm.*"), model.MaxStateElems)
	}
	return model.RecurrentByKVHeads(c, elems)
}

// NewHybrid binds the weights of cfg from src.
func NewHybrid(cfg *model.Config, src model.Source) (model.Model, error) {
	w, err := decoder.Bind(cfg, src, func(b *model.Binder, c *model.Config, p string, i int) decoder.Layer {
		l := decoder.Layer{
			AttnNorm: decoder.RMSNorm(b, p+"attn_norm.weight", c.Dim),
			FFNNorm:  decoder.RMSNorm(b, p+"ffn_norm.weight", c.Dim),
		}
		if c.Recurrent(i) {
			l.Mamba = decoder.BindMamba2(b, c, p)
		} else {
			l.Attn = decoder.SplitQKV(b, c, p)
		}
		decoder.BindMoE(&l, b, c, p, false)
		return l
	}, nil)
	if err != nil {
		return nil, err
	}
	return &Model{w}, nil
}
