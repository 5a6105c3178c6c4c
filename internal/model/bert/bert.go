// Package bert is llama.cpp's llama_model_bert graph for the encoder
// families: BERT (`bert`: learned absolute positions, GELU MLP with
// biases) and nomic-bert (`nomic-bert`: NeoX RoPE, SwiGLU without
// biases). Both: token embeddings plus the first token-type row ("sentence
// A", as llama.cpp hardcodes) plus, for BERT, positions → LayerNorm →
// per layer: attention of the stream itself (no pre-norm; bidirectional
// when attention.causal is false, as converted files say) → residual →
// LayerNorm → FFN → residual → LayerNorm. The last layer's output is the
// hidden state pooling reads (no final norm, no LM head); a reranker's
// classification head follows the pooling (decoder.PoolHead).
package bert

import (
	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "bert", Tweak: func(c *model.Config) {
		c.LayerNorm, c.LearnedPos, c.FFN, c.RopeDims, c.SlidingWindow, c.EmbedOnly = true, true, model.GELU, 0, 0, true
	}, Build: New})
	model.Register(model.Arch{Name: "nomic-bert", Tweak: func(c *model.Config) {
		c.LayerNorm, c.RopeNeoX, c.FFN, c.SlidingWindow, c.EmbedOnly = true, true, model.SwiGLU, 0, true
	}, Build: New})
}

// Model is an encoder's weights.
type Model struct {
	decoder.Weights
	PosEmbd  *kernels.Matrix // [ctx, dim] learned positions (BERT; nil for nomic-bert)
	TypeRow  []float32       // [dim] token_types row 0 (nil when the file has no table)
	EmbdNorm decoder.Norm    // token_embd_norm
	// per layer: the norms after attention's and the FFN's residual adds
	AttnOut, LayerOut []decoder.Norm
}

// New binds the weights of cfg from src. The head binds no final norm and
// no output matrix (an encoder has neither).
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	m := &Model{}
	rope := cfg.Arch == "nomic-bert"
	if !cfg.PoolingSet && hasTensor(src, "cls.output.weight") {
		// A converted cross-encoder (bge-reranker) has a classification
		// head and no pooling_type: llama.cpp's users pass --reranking
		// (pooling rank); Loom reads the head as saying so.
		cfg.Pooling = model.PoolRank
	}
	var err error
	m.Weights, err = decoder.Bind(cfg, src, func(b *model.Binder, c *model.Config, p string, _ int) decoder.Layer {
		l := decoder.Layer{}
		if b.Has(p + "attn_qkv.weight") {
			l.Attn = decoder.FusedQKV(b, c, p)
		} else {
			l.Attn = decoder.SplitQKV(b, c, p)
			if b.Has(p + "attn_q.bias") {
				l.Attn.BindQKVBias(b, c, p)
			}
		}
		m.AttnOut = append(m.AttnOut, decoder.LayerNorm(b, p+"attn_output_norm.", c.Dim))
		m.LayerOut = append(m.LayerOut, decoder.LayerNorm(b, p+"layer_output_norm.", c.Dim))
		if rope {
			l.FFN = decoder.GatedFFN(b, c, p)
		} else {
			l.FFN = decoder.MLP(b, c, p)
		}
		return l
	}, func(b *model.Binder, c *model.Config) {
		if !rope {
			m.PosEmbd = b.Matrix("position_embd.weight", c.CtxLen, c.Dim)
			if m.PosEmbd != nil {
				m.PosEmbd.Embedding = true
			}
		}
		if t, ok := b.Src.Tensor("token_types.weight"); ok && len(t.Dims) == 2 {
			rows := int(min(t.Dims[1], 1<<16))
			if c.TokenTypes > 0 {
				rows = c.TokenTypes
			}
			if tab := b.Matrix("token_types.weight", rows, c.Dim); tab != nil {
				m.TypeRow = make([]float32, c.Dim)
				tab.Row(m.TypeRow, 0)
			}
		}
		m.EmbdNorm = decoder.LayerNorm(b, "token_embd_norm.", c.Dim)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// NewRunner implements model.Model.
func (m *Model) NewRunner(opts model.RunnerOptions) model.Runner { return decoder.NewRunner(m, opts) }

// Forward implements decoder.Net.
func (m *Model) Forward(s *decoder.Step) {
	s.Embed(m.Head.Embd)
	if m.TypeRow != nil {
		s.AddRow(m.TypeRow)
	}
	if m.PosEmbd != nil {
		s.AddPositions(m.PosEmbd)
	} else {
		s.Angles(&m.Rope)
	}
	s.NormStream(&m.EmbdNorm)
	s.Embedded()
	for li := range m.Layers {
		l := &m.Layers[li]
		s.Input()
		s.Attention(li, &l.Attn)
		s.Residual()
		s.NormStream(&m.AttnOut[li])
		s.Input()
		if m.PosEmbd != nil {
			s.GELU(&l.FFN)
		} else {
			s.SwiGLU(&l.FFN)
		}
		s.Residual()
		s.NormStream(&m.LayerOut[li])
		s.LayerDone(li)
	}
	s.Logits(&m.Head, 0) // the hidden rows: no final norm, no head
}

func hasTensor(src model.Source, name string) bool { _, ok := src.Tensor(name); return ok }
