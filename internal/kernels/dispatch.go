package kernels

import (
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// DotFunc is Σ x[i]·y[i] over n elements: x weights of a tensor type, y
// activations in that type's quant.Ops.ActType layout.
type DotFunc func(n int, x, y []byte) float32

// Impl is one registered implementation of a type's dot product.
type Impl struct {
	Name string
	Dot  DotFunc
}

// impls lists the fast implementations per type that this CPU supports, in
// registration order; the generic reference (internal/quant) is always
// available in addition.
var impls = map[tensor.DType][]Impl{}

func register(t tensor.DType, name string, f DotFunc) {
	impls[t] = append(impls[t], Impl{name, f})
}

// Impls returns every implementation of t's dot product usable here, the
// generic reference first; tests run each against the reference.
func Impls(t tensor.DType) []Impl {
	out := []Impl{{"generic", genericDot(t)}}
	return append(out, impls[t]...)
}

func genericDot(t tensor.DType) DotFunc {
	o, err := quant.For(t)
	if err != nil {
		return nil
	}
	return o.Dot
}

// bestDot is the fastest implementation available for t.
func bestDot(t tensor.DType) DotFunc {
	if l := impls[t]; len(l) > 0 {
		return l[len(l)-1].Dot
	}
	return genericDot(t)
}
