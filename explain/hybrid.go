package explain

import (
	"fmt"

	"github.com/loom-inference/loom/engine"
)

// Hybrid models: what their recurrent layers compute, their work per
// token, and how their cache and work grow with the context beside the
// same shape with attention on every layer.

// growth is, for a hybrid model, how a sequence's cache and a token's
// attention work grow with its context, beside a model of the same width
// and depth with attention on every layer: the recurrent layers' state
// and update cost the same at any length.
func growth(c engine.ModelInfo, w workModel, k KVCache) []ContextCost {
	if k.StateBytes == 0 {
		return nil
	}
	perLayer := w.attnPerPos / float64(max(k.attnLayers(c), 1))
	var out []ContextCost
	for _, n := range []int{512, 4096, 16384, 131072} {
		out = append(out, ContextCost{Ctx: n,
			Bytes: k.StateBytes + k.BytesPerToken*int64(n), AttnOnlyBytes: k.AttnOnlyBytesPerToken * int64(n),
			FLOPs: w.layerFLOPs + w.headFLOPs + w.attnFLOPs(n), AttnOnlyFLOPs: w.layerFLOPs - w.stateFLOPs + w.headFLOPs + perLayer*float64(c.NLayers*n)})
	}
	return out
}

// attnLayers counts the layers with attention.
func (k KVCache) attnLayers(c engine.ModelInfo) int { return c.NLayers - k.StateLayers }

// recurrentNote says what a hybrid model's recurrent layers compute.
func recurrentNote(c engine.ModelInfo) string {
	switch c.SSMKind {
	case engine.SSMDeltaNet:
		sv := c.SSMInner / c.SSMDtRank
		return fmt.Sprintf("gated delta nets (linear attention with a state of %d heads × %d×%d per sequence instead of a K/V cache): "+
			"q, k, v = silu(conv%d(x·W_qkv)); q, k L2-normalized; per head M ← e^g·M, M += β(v − M·k)·kᵀ, o = M·q/√%d; out = (rmsnorm(o) ⊙ silu(x·W_z))·W_out",
			c.SSMDtRank, sv, sv, c.SSMConv, sv)
	case engine.SSMShortConv:
		return fmt.Sprintf("gated short convolutions (a state of the last %d inputs per sequence instead of a K/V cache): "+
			"B, C, X = x·W_in; out = (C ⊙ conv%d(B ⊙ X))·W_out, no activation", c.SSMConv-1, c.SSMConv)
	case engine.SSMMamba2:
		p := c.SSMInner / c.SSMDtRank
		return fmt.Sprintf("Mamba-2 layers (a state of %d heads × %d×%d per sequence instead of a K/V cache): "+
			"z, xBC, dt = x·W_in; x, B, C = silu(conv%d(xBC) + b); per head Δ = softplus(dt + b_dt), S ← e^{ΔA}·S + (Δx)Bᵀ, y = S·C + D·x; "+
			"out = groupnorm%d(y ⊙ silu(z))·W_out", c.SSMDtRank, p, c.SSMState, c.SSMConv, c.SSMGroups)
	}
	return "recurrent layers"
}

// stateFLOPs is one token's work in one recurrent layer besides its
// matrix products (which the tensors count).
func stateFLOPs(c engine.ModelInfo) float64 {
	switch c.SSMKind {
	case engine.SSMDeltaNet:
		// decay, M·k, the rank-1 update and M·q over each value head's
		// S×S state (≈ 8·S² FLOPs), and the convolution's taps over
		// every channel
		s := float64(c.SSMInner / c.SSMDtRank)
		return 8*s*s*float64(c.SSMDtRank) + 2*float64(c.SSMConv*(2*c.SSMGroups*c.SSMState+c.SSMInner))
	case engine.SSMShortConv:
		return 2*float64(c.SSMConv*c.Dim) + 2*float64(c.Dim) // the taps, B⊙X and C⊙·
	case engine.SSMMamba2:
		// per channel and state: decay, input, read (≈ 5 FLOPs), and the
		// convolution's taps over x, B and C
		return 5*float64(c.SSMInner*c.SSMState) + 2*float64(c.SSMConv*(c.SSMInner+2*c.SSMGroups*c.SSMState))
	}
	return 0
}
