package hfmodel

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

// folderMeta opens dir and returns its metadata as the converter would
// write it, and the folder.
func folderMeta(t *testing.T, dir string) (*gguf.File, *Folder) {
	t.Helper()
	fo, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fo.Close() })
	meta, err := fo.MetaFile()
	if err != nil {
		t.Fatal(err)
	}
	return meta, fo
}

// checkRopeKeys compares the RoPE scaling keys of meta with want (nil: absent).
func checkRopeKeys(t *testing.T, meta *gguf.File, arch string, want map[string]any) {
	t.Helper()
	for _, k := range []string{"rope.scaling.type", "rope.scaling.factor", "rope.scaling.original_context_length", "rope.scaling.attn_factor",
		"rope.scaling.yarn_beta_fast", "rope.scaling.yarn_beta_slow"} {
		v, ok := meta.Get(arch + "." + k)
		w, wok := want[k]
		switch {
		case ok != wok:
			t.Errorf("%s: present %v, want %v (%v)", k, ok, wok, v)
		case ok && v.V != w:
			t.Errorf("%s = %v (%T), want %v (%T)", k, v.V, v.V, w, w)
		}
	}
}

// yarnAttn is llama_context's yarn_attn_factor for YaRN by factor with
// no log multiplier: get_mscale(factor, 1)/(1 + 0.1·logf(factor)) in
// float32, factor being 1/rope_freq_scale.
func yarnAttn(factor float32) float32 {
	factor = 1 / (1 / factor)
	l := float32(math.Log(float64(factor)))
	return (float32(float32(0.1)*l) + 1) * (1 / float32(1+float32(float32(0.1)*l)))
}

// TestRopeScalingFolder: rope_scaling (or transformers 5's
// rope_parameters) of the families whose converter class runs
// TextModel.set_gguf_parameters — Qwen2.5's and DeepSeek-style
// {type: yarn, factor, original_max_position_embeddings}, linear, longrope
// — gives the keys the converter writes, and the config is the one
// llama.cpp builds from them.
func TestRopeScalingFolder(t *testing.T) {
	yarn := map[string]any{"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}
	cases := []struct {
		name, hf, arch string
		over           map[string]any
		keys           map[string]any
		scaling        string
		scale, ext     float32
		attn           float32
		yarnOrig       int
		err            string
	}{
		{"Qwen2.5 yarn", "Qwen2ForCausalLM", "qwen2", map[string]any{"rope_scaling": yarn},
			map[string]any{"rope.scaling.type": "yarn", "rope.scaling.factor": float32(4), "rope.scaling.original_context_length": uint32(16)},
			"yarn", 4, 1, yarnAttn(4), 16, ""},
		{"Llama yarn with betas", "LlamaForCausalLM", "llama", map[string]any{"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 8.0,
			"original_max_position_embeddings": 32, "beta_fast": 16.0, "beta_slow": 2.0}},
			map[string]any{"rope.scaling.type": "yarn", "rope.scaling.factor": float32(8), "rope.scaling.original_context_length": uint32(32),
				"rope.scaling.yarn_beta_fast": float32(16), "rope.scaling.yarn_beta_slow": float32(2)},
			"yarn", 8, 1, yarnAttn(8), 32, ""}, // llama.cpp's llama reads no betas: 32 and 1 stay
		{"Qwen3 yarn in rope_parameters", "Qwen3ForCausalLM", "qwen3", map[string]any{"rope_theta": nil, "rope_parameters": map[string]any{
			"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32, "rope_theta": 1e6}},
			map[string]any{"rope.scaling.type": "yarn", "rope.scaling.factor": float32(2), "rope.scaling.original_context_length": uint32(32)},
			"yarn", 2, 1, yarnAttn(2), 32, ""},
		{"Qwen2 linear", "Qwen2ForCausalLM", "qwen2", map[string]any{"rope_scaling": map[string]any{"type": "linear", "factor": 2.0}},
			map[string]any{"rope.scaling.type": "linear", "rope.scaling.factor": float32(2)}, "linear", 2, 0, 1, 64, ""},
		{"Llama longrope: the type only", "LlamaForCausalLM", "llama", map[string]any{"rope_scaling": map[string]any{"type": "longrope", "long_factor": []float64{1, 2}, "short_factor": []float64{1, 1}}},
			map[string]any{"rope.scaling.type": "longrope"}, "longrope", 1, 0, 1, 64, ""},
		{"Qwen3-MoE yarn without a factor: nothing", "Qwen3MoeForCausalLM", "qwen3moe", map[string]any{"num_experts": 2, "num_experts_per_tok": 1,
			"moe_intermediate_size": 16, "rope_scaling": map[string]any{"type": "yarn", "original_max_position_embeddings": 16}},
			map[string]any{}, "linear", 1, 0, 1, 64, ""},
		{"yarn without its context", "Qwen2ForCausalLM", "qwen2", map[string]any{"rope_scaling": map[string]any{"type": "yarn", "factor": 4.0}},
			nil, "", 0, 0, 0, 0, "rope_scaling of type yarn has no original_max_position_embeddings"},
		{"Qwen2 unknown type", "Qwen2ForCausalLM", "qwen2", map[string]any{"rope_scaling": map[string]any{"type": "ntk", "factor": 4.0}},
			nil, "", 0, 0, 0, 0, `rope_scaling type "ntk" is not supported`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := tinyModern(t, c.hf, c.over, nil)
			if c.hf == "Qwen3MoeForCausalLM" { // experts' tensors are beside the point: the keys only
				fo, err := Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				defer fo.Close()
				meta, err := fo.MetaFile()
				if err != nil {
					t.Fatal(err)
				}
				checkRopeKeys(t, meta, c.arch, c.keys)
				return
			}
			if c.err != "" {
				_, err := Open(dir)
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			meta, fo := folderMeta(t, dir)
			checkRopeKeys(t, meta, c.arch, c.keys)
			cfg, err := model.ConfigFrom(meta, fo)
			if err != nil {
				t.Fatal(err)
			}
			got := []any{cfg.RopeScaling, cfg.RopeScale, cfg.Yarn.ExtFactor, cfg.Yarn.AttnFactor, cfg.Yarn.OrigCtx, cfg.Yarn.BetaFast, cfg.Yarn.BetaSlow}
			want := []any{c.scaling, c.scale, c.ext, c.attn, c.yarnOrig, float32(32), float32(1)}
			if !slices.Equal(got, want) {
				t.Errorf("scaling, factor, ext, attn, YaRN context, betas = %v, want %v", got, want)
			}
		})
	}
}

// TestPhi3LongRopeFolder: a Phi-3 128k folder (rope_scaling of type
// longrope or su with long_factor and short_factor, the original context
// at the top level) converts as Phi3MiniModel does: the original context,
// no scaling type, the magnitude √(1 + ln(max/orig)/ln orig) (0.1·ln
// scale + 1 for yarn) and rope_factors_long/short.weight; the model then
// picks the long factors when the context (padded to 256) exceeds the
// original one (the magnitude is 1, unapplied, when the model is not
// longer than its original context).
func TestPhi3LongRopeFolder(t *testing.T) {
	long, short := []any{1.0, 3.5}, []any{1.0, 1.25}
	lr := func(typ string, extra map[string]any) map[string]any {
		m := map[string]any{"rope_scaling": map[string]any{"type": typ, "long_factor": long, "short_factor": short},
			"max_position_embeddings": 1024, "original_max_position_embeddings": 256}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	su := float32(math.Sqrt(1 + math.Log(4)/math.Log(256)))
	cases := []struct {
		name    string
		over    map[string]any
		keys    map[string]any
		factors bool
		err     string
	}{
		{"longrope", lr("longrope", nil), map[string]any{"rope.scaling.original_context_length": uint32(256), "rope.scaling.attn_factor": su}, true, ""},
		{"su", lr("su", nil), map[string]any{"rope.scaling.original_context_length": uint32(256), "rope.scaling.attn_factor": su}, true, ""},
		{"yarn-typed factors", lr("yarn", nil), map[string]any{"rope.scaling.original_context_length": uint32(256),
			"rope.scaling.attn_factor": float32(0.1*math.Log(4) + 1)}, true, ""},
		{"not longer than the original", lr("longrope", map[string]any{"max_position_embeddings": 256}),
			map[string]any{"rope.scaling.original_context_length": uint32(256), "rope.scaling.attn_factor": float32(1)}, true, ""},
		{"4k: the original context only", map[string]any{"max_position_embeddings": 256, "original_max_position_embeddings": 256},
			map[string]any{"rope.scaling.original_context_length": uint32(256)}, false, ""},
		{"no short factors", lr("longrope", map[string]any{"rope_scaling": map[string]any{"type": "longrope", "long_factor": long}}), nil, false,
			"rope_scaling has no short_factor list"},
		{"factors of the wrong length", lr("longrope", map[string]any{"rope_scaling": map[string]any{"type": "longrope", "long_factor": long, "short_factor": []any{1.0}}}),
			nil, false, "short_factor has 1 entries, want rotary dims/2 = 2"},
		{"no type", lr("", nil), nil, false, "has long_factor but no type"},
		{"an unknown type", lr("dynamic", nil), nil, false, `Phi-3 rope_scaling type "dynamic" is not supported`},
		{"a zero factor", lr("longrope", map[string]any{"rope_scaling": map[string]any{"type": "longrope", "long_factor": []any{0.0, 1.0}, "short_factor": short}}),
			nil, false, "long_factor[0] = 0 (must be positive)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := tinyModern(t, "Phi3ForCausalLM", c.over, nil)
			if c.err != "" {
				_, err := Open(dir)
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			meta, fo := folderMeta(t, dir)
			checkRopeKeys(t, meta, "phi3", c.keys)
			lt, hasL := fo.Tensor("rope_factors_long.weight")
			st, hasS := fo.Tensor("rope_factors_short.weight")
			if hasL != c.factors || hasS != c.factors {
				t.Fatalf("factor tensors %v %v, want %v", hasL, hasS, c.factors)
			}
			if !c.factors {
				return
			}
			for _, x := range []struct {
				t    model.Tensor
				want []any
			}{{lt, long}, {st, short}} {
				if len(x.t.Dims) != 1 || x.t.Dims[0] != 2 || len(x.t.Data) != 8 {
					t.Fatalf("%s: %v, %d bytes", x.t.Name, x.t.Dims, len(x.t.Data))
				}
				for i, w := range x.want {
					if got := math.Float32frombits(uint32(x.t.Data[4*i]) | uint32(x.t.Data[4*i+1])<<8 | uint32(x.t.Data[4*i+2])<<16 | uint32(x.t.Data[4*i+3])<<24); got != float32(w.(float64)) {
						t.Errorf("%s[%d] = %v, want %v", x.t.Name, i, got, w)
					}
				}
			}
			for _, ctx := range []struct {
				n     int
				which string
			}{{64, "short"}, {256, "short"}, {257, "long"}} {
				m, err := model.LoadGGUFWith(meta, fo, func(cfg *model.Config) error { cfg.RopeCtx = ctx.n; return nil })
				if err != nil {
					t.Fatal(err)
				}
				if got := m.Config().LongRope; got != ctx.which && c.keys["rope.scaling.original_context_length"] == uint32(256) {
					t.Errorf("context %d: %q factors, want %q", ctx.n, got, ctx.which)
				}
				ms := m.(*decoder.PreNorm).Rope.MScale
				if ms == 0 { // unset: 1
					ms = 1
				}
				if ms != c.keys["rope.scaling.attn_factor"] {
					t.Errorf("context %d: magnitude %v, want %v", ctx.n, ms, c.keys["rope.scaling.attn_factor"])
				}
			}
		})
	}
}
