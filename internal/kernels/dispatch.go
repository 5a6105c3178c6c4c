package kernels

import (
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// DotFunc is Σ x[i]·y[i] over n elements: x weights of a tensor type, y
// activations in that type's quant.Ops.ActType layout.
type DotFunc func(n int, x, y []byte) float32

// Dot4Func computes four dot products of one weight row x with the
// activation rows y, y+ystride, y+2·ystride, y+3·ystride into out[0:4],
// each bit-identical to the implementation's DotFunc: prefill shares the
// weight unpacking across tokens.
type Dot4Func func(n int, x, y []byte, ystride int, out []float32)

// Impl is one registered implementation of a type's dot product.
type Impl struct {
	Name string
	Dot  DotFunc
	// Dot4, when set, serves batches of four tokens (prefill).
	Dot4 Dot4Func
	// Batch, when set, replaces Dot (and Dot4) for products of two or more
	// tokens: llama.cpp sums those in another order (llamafile's tinyBLAS)
	// for some types.
	Batch DotFunc
}

// impls lists the fast implementations per type that this CPU supports, in
// registration order; the generic reference (internal/quant) is always
// available in addition.
var impls = map[tensor.DType][]Impl{}

func register(t tensor.DType, name string, f DotFunc) {
	impls[t] = append(impls[t], Impl{Name: name, Dot: f})
}

func registerBatch(t tensor.DType, name string, f, batch DotFunc) {
	impls[t] = append(impls[t], Impl{Name: name, Dot: f, Batch: batch})
}

func registerX4(t tensor.DType, name string, d4 Dot4Func, f DotFunc) {
	impls[t] = append(impls[t], Impl{Name: name, Dot: f, Dot4: d4})
}

// Impls returns every implementation of t's dot product usable here, the
// generic reference first; tests run each against the reference.
func Impls(t tensor.DType) []Impl {
	out := []Impl{{Name: "generic", Dot: genericDot(t)}}
	return append(out, impls[t]...)
}

func genericDot(t tensor.DType) DotFunc {
	o, err := quant.For(t)
	if err != nil {
		return nil
	}
	return o.Dot
}

// best is the implementation Matrix uses: the last registered (init order
// puts the fastest last). The SIMD kernels reproduce ggml's own summation
// orders (llama.cpp's numbers); on CPUs with AVX-512 VNNI the packed kernels
// (packed.go) take over Q4_0, Q5_0, Q8_0, Q4_K and Q6_K in those orders.
// Without a SIMD kernel (other CPUs, -tags purego) the portable order
// references serve, so results stay llama.cpp's bit for bit, only slower;
// quant's plain generic dot is the last resort.
func best(t tensor.DType) Impl {
	if l := impls[t]; len(l) > 0 {
		return l[len(l)-1]
	}
	if o, ok := portableOrders[t]; ok {
		return Impl{Name: "generic ggml order", Dot: o.dot, Batch: o.batch}
	}
	return Impl{Name: "generic", Dot: genericDot(t)}
}
