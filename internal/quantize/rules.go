// Package quantize rewrites a GGUF file with its weights in another type,
// as llama-quantize (llama.cpp b4748) does without an importance matrix:
// the same choice of type for every tensor (its llama_tensor_get_type
// rules for each mix, fallbacks for rows a type's blocks do not divide)
// and the same bytes (ggml's reference quantizers, internal/quant).
// MXFP4_MOE, which b4748 predates, follows llama.cpp's 2026 rules.
package quantize

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/loom-inference/loom/internal/tensor"
)

// FType is a llama_ftype: a file's target mix.
type FType int

// The mixes llama-quantize offers that Loom writes (llama.h's values,
// stored as general.file_type).
const (
	AllF32 FType = 0
	F16    FType = 1
	Q4_0   FType = 2
	Q4_1   FType = 3
	Q8_0   FType = 7
	Q5_0   FType = 8
	Q5_1   FType = 9
	Q2_K   FType = 10
	Q3_K_S FType = 11
	Q3_K_M FType = 12
	Q3_K_L FType = 13
	Q4_K_S FType = 14
	Q4_K_M FType = 15
	Q5_K_S FType = 16
	Q5_K_M FType = 17
	Q6_K   FType = 18
	Q2_K_S FType = 21
	IQ4_NL FType = 25
	BF16   FType = 32
	// MXFP4_MOE: expert tensors MXFP4, the rest Q8_0 (llama.cpp 2026's
	// LLAMA_FTYPE_MOSTLY_MXFP4_MOE, what gpt-oss is released in).
	MXFP4_MOE FType = 38
)

var ftypes = []struct {
	name string
	ft   FType
	base tensor.DType // the type most tensors get
}{
	{"F32", AllF32, tensor.F32}, {"F16", F16, tensor.F16}, {"BF16", BF16, tensor.BF16},
	{"Q4_0", Q4_0, tensor.Q4_0}, {"Q4_1", Q4_1, tensor.Q4_1}, {"Q5_0", Q5_0, tensor.Q5_0},
	{"Q5_1", Q5_1, tensor.Q5_1}, {"Q8_0", Q8_0, tensor.Q8_0}, {"IQ4_NL", IQ4_NL, tensor.IQ4_NL},
	{"Q2_K", Q2_K, tensor.Q2_K},
	{"Q3_K_S", Q3_K_S, tensor.Q3_K}, {"Q3_K_M", Q3_K_M, tensor.Q3_K}, {"Q3_K_L", Q3_K_L, tensor.Q3_K},
	{"Q4_K_S", Q4_K_S, tensor.Q4_K}, {"Q4_K_M", Q4_K_M, tensor.Q4_K},
	{"Q5_K_S", Q5_K_S, tensor.Q5_K}, {"Q5_K_M", Q5_K_M, tensor.Q5_K},
	{"Q6_K", Q6_K, tensor.Q6_K},
	{"MXFP4_MOE", MXFP4_MOE, tensor.MXFP4},
}

// aliases are llama-quantize's short names for the medium mixes.
var aliases = map[string]string{"Q3_K": "Q3_K_M", "Q4_K": "Q4_K_M", "Q5_K": "Q5_K_M"}

// ParseFType reads a mix name (case-insensitive) or a llama_ftype number.
func ParseFType(s string) (FType, error) {
	u := strings.ToUpper(s)
	if u == "Q2_K_S" || s == "21" {
		return 0, fmt.Errorf("quantize: Q2_K_S needs an importance matrix (as in llama-quantize), which Loom does not compute; use Q2_K or Q3_K_S")
	}
	if a, ok := aliases[u]; ok {
		u = a
	}
	for _, f := range ftypes {
		if f.name == u {
			return f.ft, nil
		}
	}
	if n, err := strconv.Atoi(s); err == nil {
		for _, f := range ftypes {
			if int(f.ft) == n {
				return f.ft, nil
			}
		}
	}
	return 0, fmt.Errorf("quantize: unknown type %q (one of %s)", s, strings.Join(Names(), ", "))
}

// Names lists the mixes.
func Names() []string {
	var s []string
	for _, f := range ftypes {
		s = append(s, f.name)
	}
	return s
}

// String names f as llama.cpp does: the mixes above, Q2_K_S (which needs
// an importance matrix Loom does not compute), or "ftype(N)". It is the one
// table of general.file_type names (pull's list and inspect read it).
func (f FType) String() string {
	for _, x := range ftypes {
		if x.ft == f {
			return x.name
		}
	}
	if f == Q2_K_S {
		return "Q2_K_S"
	}
	return fmt.Sprintf("ftype(%d)", int(f))
}

// Base is the type most tensors of the mix get.
func (f FType) Base() tensor.DType {
	for _, x := range ftypes {
		if x.ft == f {
			return x.base
		}
	}
	return tensor.F32
}

func quantized(t tensor.DType) bool { return t.BlockSize() > 1 }

// Model is what the rules need to know of the model.
type Model struct {
	Arch      string
	NLayer    int
	NHead     int
	NHeadKV   int
	NExpert   int
	HasOutput bool // an output.weight separate from token_embd.weight
}

// Tensor is one weight the plan decides for: name, type, ggml dims.
type Tensor struct {
	Name string
	Type tensor.DType
	Dims []uint64
}

// Choice is the plan for one tensor.
type Choice struct {
	Tensor
	To       tensor.DType // the type written (Type itself: copied as is)
	Fallback bool         // the mix's type did not divide the rows
}

// Order sorts tensors as llama.cpp's loader does (its weights map): by
// layer number (none first), then by name. The rules count tensors in
// this order.
func Order(ts []Tensor) {
	sort.SliceStable(ts, func(i, j int) bool {
		li, lj := layerOf(ts[i].Name), layerOf(ts[j].Name)
		if li != lj {
			return li < lj
		}
		return ts[i].Name < ts[j].Name
	})
}

// layerOf parses "blk.N." (-1 if the name has no layer).
func layerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1
	}
	i := strings.IndexByte(rest, '.')
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(rest[:i])
	if err != nil {
		return -1
	}
	return n
}

// Plan decides every tensor's type for ft, in the order given (call Order
// first), as llama_model_quantize_internal and llama_tensor_get_type do.
func Plan(m Model, ts []Tensor, ft FType) ([]Choice, error) {
	base := ft.Base()
	st := &state{m: m, ft: ft, nLayer: m.NLayer}
	for _, t := range ts {
		if strings.Contains(t.Name, "attn_v.weight") || strings.Contains(t.Name, "attn_qkv.weight") || strings.Contains(t.Name, "attn_kv_b.weight") {
			st.nAttnV++
		}
	}
	var out []Choice
	for _, t := range ts {
		c := Choice{Tensor: t, To: t.Type}
		if quantizable(t) {
			to := base
			if quantized(base) {
				var err error
				if to, c.Fallback, err = st.typeFor(t, base); err != nil {
					return nil, err
				}
			}
			c.To = to
		}
		out = append(out, c)
	}
	return out, nil
}

// mxfp4MoE is the MXFP4_MOE mix as llama.cpp 2026 chooses it
// (llama_tensor_get_type_impl, tensor_type_fallback): a tensor of several
// matrices (ne[2] > 1: the experts) MXFP4, every other quantized tensor
// Q8_0 (the output and token embeddings too, before their usual rules);
// rows that are not whole blocks fall back to F16, as its fallback does
// for a type of 32-element blocks.
func mxfp4MoE(t Tensor) (tensor.DType, bool, error) {
	to := tensor.Q8_0
	if len(t.Dims) > 2 && t.Dims[2] > 1 {
		to = tensor.MXFP4
	}
	if t.Dims[0]%uint64(to.BlockSize()) != 0 {
		return tensor.F16, true, nil
	}
	return to, false, nil
}

// quantizable is llama-quantize's test of which tensors change type.
func quantizable(t Tensor) bool {
	n := t.Name
	nDims := len(t.Dims)
	for nDims > 1 && t.Dims[nDims-1] == 1 {
		nDims--
	}
	return strings.HasSuffix(n, "weight") && nDims >= 2 &&
		!strings.Contains(n, "_norm.weight") &&
		!strings.Contains(n, "ffn_gate_inp.weight") &&
		n != "position_embd.weight" && n != "token_types.weight" &&
		!strings.Contains(n, "ssm_conv1d.weight") && !strings.Contains(n, "ssm_x.weight") && !strings.Contains(n, "ssm_dt.weight")
}

// state carries the counters llama_tensor_get_type keeps across tensors.
type state struct {
	m                Model
	ft               FType
	nLayer, nAttnV   int
	iAttnV, iFFNDown int
	iFFNGate, iFFNUp int
}

func useMoreBits(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

// layer is the layer of an FFN tensor: its counter, or with experts the
// number in its name (their tensors are not one per layer in order).
func (s *state) layer(counter int, name string) (int, error) {
	if s.m.NExpert <= 1 {
		return counter, nil
	}
	l := layerOf(name)
	if l < 0 || l >= s.nLayer {
		return 0, fmt.Errorf("quantize: cannot tell the layer of tensor %s (of %d)", name, s.nLayer)
	}
	return l, nil
}

// typeFor is llama_tensor_get_type for the mixes here.
func (s *state) typeFor(t Tensor, to tensor.DType) (tensor.DType, bool, error) {
	name, ft, m := t.Name, s.ft, s.m
	if ft == MXFP4_MOE {
		return mxfp4MoE(t)
	}
	gqa := 1
	if m.NHeadKV > 0 {
		gqa = m.NHead / m.NHeadKV
	}
	switch {
	case name == "output.weight" || !m.HasOutput && name == "token_embd.weight":
		if t.Dims[0]%256 != 0 {
			to = tensor.Q8_0
		} else if to != tensor.Q8_0 {
			to = tensor.Q6_K
		}
	case name == "token_embd.weight":
	case strings.Contains(name, "attn_v.weight"):
		switch {
		case ft == Q2_K:
			to = tensor.Q3_K
			if gqa >= 4 {
				to = tensor.Q4_K
			}
		case ft == Q2_K_S && gqa >= 4:
			to = tensor.Q4_K
		case ft == Q3_K_M:
			to = tensor.Q4_K
			if s.iAttnV < 2 {
				to = tensor.Q5_K
			}
		case ft == Q3_K_L:
			to = tensor.Q5_K
		case ft == IQ4_NL && gqa >= 4:
			to = tensor.Q5_K
		case (ft == Q4_K_M || ft == Q5_K_M) && useMoreBits(s.iAttnV, s.nAttnV):
			to = tensor.Q6_K
		case ft == Q4_K_S && s.iAttnV < 4:
			to = tensor.Q5_K
		}
		if m.NExpert == 8 {
			to = tensor.Q8_0
		}
		s.iAttnV++
	case strings.Contains(name, "attn_k.weight"):
		if m.NExpert == 8 {
			to = tensor.Q8_0
		}
	case strings.Contains(name, "attn_q.weight"):
	case strings.Contains(name, "ffn_down"):
		i, err := s.layer(s.iFFNDown, name)
		if err != nil {
			return 0, false, err
		}
		n := s.nLayer
		switch {
		case ft == Q2_K:
			to = tensor.Q3_K
		case ft == Q2_K_S:
			if i < n/8 {
				to = tensor.Q4_K
			}
		case ft == Q3_K_M:
			switch {
			case i < n/16:
				to = tensor.Q5_K
			case m.Arch != "falcon" || useMoreBits(i, n):
				to = tensor.Q4_K
			default:
				to = tensor.Q3_K
			}
		case ft == Q3_K_L:
			to = tensor.Q5_K
		case ft == Q4_K_M:
			if useMoreBits(i, n) {
				to = tensor.Q6_K
			}
		case i < n/8 && ft == IQ4_NL:
			to = tensor.Q5_K
		case ft == Q5_K_M && useMoreBits(i, n):
			to = tensor.Q6_K
		case ft == Q4_K_S && i < n/8:
			to = tensor.Q5_K
		}
		s.iFFNDown++
	case strings.Contains(name, "attn_output.weight"):
		if m.NExpert == 8 {
			switch ft {
			case Q2_K, Q3_K_S, Q3_K_M, IQ4_NL, Q4_K_S, Q4_K_M:
				to = tensor.Q5_K
			}
		} else {
			switch ft {
			case Q2_K:
				to = tensor.Q3_K
			case Q3_K_M:
				to = tensor.Q4_K
			case Q3_K_L:
				to = tensor.Q5_K
			}
		}
	case strings.Contains(name, "attn_qkv.weight"):
		switch ft {
		case Q3_K_M, Q3_K_L:
			to = tensor.Q4_K
		case Q4_K_M:
			to = tensor.Q5_K
		case Q5_K_M:
			to = tensor.Q6_K
		}
	case strings.Contains(name, "ffn_gate") || strings.Contains(name, "ffn_up"):
		// No mix here changes these; llama.cpp still insists on a layer
		// in the name of an expert tensor.
		if _, err := s.layer(0, name); err != nil {
			return 0, false, err
		}
	}
	// Rows the chosen type's blocks do not divide fall back.
	if int(t.Dims[0])%to.BlockSize() == 0 {
		return to, false, nil
	}
	switch to {
	case tensor.Q2_K, tensor.Q3_K, tensor.IQ4_XS:
		to = tensor.IQ4_NL
	case tensor.Q4_K:
		to = tensor.Q5_0
	case tensor.Q5_K:
		to = tensor.Q5_1
	case tensor.Q6_K:
		to = tensor.Q8_0
	default:
		return 0, false, fmt.Errorf("quantize: tensor %s: rows of %d do not divide into %s blocks", name, t.Dims[0], to)
	}
	if int(t.Dims[0])%to.BlockSize() != 0 {
		to = tensor.F16
	}
	return to, true, nil
}
