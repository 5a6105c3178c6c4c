package engine

import (
	"sort"
	"strings"

	"github.com/loom-inference/loom/internal/kernels"
)

// KernelUse says which kernels run one tensor type's matrix products.
type KernelUse struct {
	Type     string // ggml type name
	Decode   string // the kernel for one token
	Prefill  string // the kernel for a batch of tokens
	Matrices int
	Bytes    int64
}

// Kernels reports, per tensor type and kernel, the model's matrix
// products: so a benchmark result can be explained (VNNI or AVX2, packed
// or not, float GEMM or vec_dot).
func (e *Engine) Kernels() []KernelUse {
	idx := map[[3]string]int{}
	var out []KernelUse
	for _, m := range e.matrices() {
		k := [3]string{m.Type.String(), m.Kernel(), m.GemmKernel()}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, KernelUse{Type: k[0], Decode: k[1], Prefill: k[2]})
		}
		out[i].Matrices++
		out[i].Bytes += int64(len(m.Data))
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Bytes > out[b].Bytes })
	return out
}

// DecodeBytes is what one decode step reads of the weights: every matrix
// multiplied, with mixture-of-experts tensors counted for the experts a
// token uses only (NExpertsUsed of NExperts), plus one embedding row. The
// KV cache and activations are not counted.
func (e *Engine) DecodeBytes() int64 {
	c := e.model.Config()
	var total float64
	for _, m := range e.matrices() {
		b := float64(len(m.Data))
		if c.NExperts > 0 && strings.Contains(m.Name, "_exps") {
			b *= float64(c.NExpertsUsed) / float64(c.NExperts)
		}
		total += b
	}
	for _, t := range e.tensors {
		if t.Name == "token_embd.weight" && len(t.Dims) == 2 && t.Dims[1] > 0 {
			total += float64(t.Bytes) / float64(t.Dims[1])
		}
	}
	return int64(total)
}

// PrefillFLOPs is the matrix-product work of evaluating n prompt tokens in
// one batch: 2 operations per multiply-add, every layer matrix for every
// token (mixture-of-experts tensors for the experts a token uses), the LM
// head for the last token only, as a prefill computes it. Attention's own
// products (2·n²·d per layer) are left out: at benchmark prompt lengths
// they are a few percent.
func (e *Engine) PrefillFLOPs(n int) float64 {
	c := e.model.Config()
	var perToken, head float64
	for _, m := range e.matrices() {
		f := 2 * float64(m.Rows) * float64(m.Cols)
		switch {
		case m.Name == "output.weight" || m.Embedding:
			head += f
		case c.NExperts > 0 && strings.Contains(m.Name, "_exps"):
			perToken += f * float64(c.NExpertsUsed) / float64(c.NExperts)
		default:
			perToken += f
		}
	}
	return float64(n)*perToken + head
}

// matrices lists the model's multiplied weights once each (a tied LM head
// is the embedding table; nil when the model cannot list them).
func (e *Engine) matrices() []*kernels.Matrix {
	mm, ok := e.model.(interface{ Matrices() []*kernels.Matrix })
	if !ok {
		return nil
	}
	var out []*kernels.Matrix
	seen := map[*kernels.Matrix]bool{}
	for _, m := range mm.Matrices() {
		if m != nil && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}
