package kernels

import "github.com/loom-inference/loom/internal/quant"

// Attention products in llama.cpp's summation orders.
//
// llama.cpp (non-flash attention) computes scores = K·q and out = Vᵀ·p with
// ggml_mul_mat on an F16 cache; q and p are rounded to F16 first, so every
// product is exact in float32 and only the order of the additions matters.
// That order depends on the batch:
//   - one token (decode): ggml_vec_dot_f16, which on AVX-512 keeps 64 lanes
//     (four 16-lane accumulators; element e goes to lane e mod 64), folds
//     them by halves (64→32→16, then _mm512_reduce_add_ps's 16→1), and adds
//     elements past the last multiple of 64 one by one in float64;
//   - several tokens (prefill): llamafile's tinyBLAS (k a multiple of 16),
//     16 lanes (element e to lane e mod 16) folded by halves.
// For out = Vᵀ·p the summed dimension is the cache length, padded by
// llama.cpp to a multiple of 32 (masked positions weigh 0), which decides
// where vec_dot's float64 tail starts.

// AttnOrder selects a summation order.
type AttnOrder uint8

const (
	OrderVecDot AttnOrder = iota // ggml_vec_dot_f16 (64 lanes + float64 tail)
	OrderGemm                    // tinyBLAS (16 lanes)
)

// OrderFor gives the order llama.cpp uses for a product over k elements in a
// batch of n tokens: tinyBLAS only takes n ≥ 2 and k a multiple of 16.
func OrderFor(n, k int) AttnOrder {
	if n >= 2 && k%16 == 0 {
		return OrderGemm
	}
	return OrderVecDot
}

// laneSum folds lanes acc[0:w] (w = 16 or 64) by halves into one float32.
func laneSum(acc []float32) float32 {
	for h := len(acc) / 2; h >= 1; h /= 2 {
		for l := 0; l < h; l++ {
			acc[l] += acc[l+h]
		}
	}
	return acc[0]
}

// ScoresF16 computes out[j] = q·k_j for the positions j < len(out) of a
// transposed F16 K, kT[off[e] + j] being element e of position j (off[e] =
// e·stride for a contiguous cache; a paged one passes a block and its row
// starts), in order o. q must hold F16-representable values.

func scoresF16Generic(out, q []float32, kT []uint16, off []int32, o AttnOrder) {
	hd := len(q)
	var lanes [64]float32
	for j := range out {
		if o == OrderGemm {
			acc := lanes[:16]
			clear(acc)
			for e, x := range q {
				acc[e&15] += x * quant.F16ToF32(kT[int(off[e])+j])
			}
			out[j] = laneSum(acc)
			continue
		}
		np := hd &^ 63
		acc := lanes[:]
		clear(acc)
		for e := 0; e < np; e++ {
			acc[e&63] += q[e] * quant.F16ToF32(kT[int(off[e])+j])
		}
		sum := float64(laneSum(acc))
		for e := np; e < hd; e++ {
			sum += float64(q[e] * quant.F16ToF32(kT[int(off[e])+j]))
		}
		out[j] = float32(sum)
	}
}

// MixF16 computes out[d] = Σ_j p[j]·v_j[d] over the positions j < len(p),
// row j of V starting at v[off[j]] (F16), in order o; nkv is llama.cpp's
// padded cache length (≥ len(p); positions past len(p) weigh 0). The lanes
// follow the logical position j, not where its row is stored, so a paged
// cache sums exactly as a contiguous one. p must hold F16-representable
// values.

func mixF16Generic(out, p []float32, v []uint16, off []int32, nkv int, o AttnOrder) {
	w := 64
	if o == OrderGemm {
		w = 16
	}
	np := nkv &^ (w - 1)
	if o == OrderGemm {
		np = nkv
	}
	var lanes [64]float32
	for d := range out {
		acc := lanes[:w]
		clear(acc)
		j := 0
		for ; j < len(p) && j < np; j++ {
			acc[j&(w-1)] += p[j] * quant.F16ToF32(v[int(off[j])+d])
		}
		sum := float64(laneSum(acc))
		for ; j < len(p); j++ {
			sum += float64(p[j] * quant.F16ToF32(v[int(off[j])+d]))
		}
		out[d] = float32(sum)
	}
}

// Strides returns off[i] = i·stride for i < n: the row starts of a
// contiguous layout, for ScoresF16 and MixF16.
func Strides(n, stride int) []int32 {
	off := make([]int32, n)
	for i := range off {
		off[i] = int32(i * stride)
	}
	return off
}
