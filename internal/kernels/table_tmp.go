package kernels

import (
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

func SupportedTypes() []tensor.DType { return quant.Types() }

type orderRefs struct{ dot, batch DotFunc }

func referenceOrder(t tensor.DType) (orderRefs, bool) {
	o, ok := portableOrders[t]
	return orderRefs{o.dot, o.batch}, ok
}

func repackReference(t tensor.DType) DotFunc {
	if r := repackOrders[t]; r != nil {
		return r.ref
	}
	return nil
}

// packReference packs 16 rows of n elements of t (row-major) block by block.
func packReference(t tensor.DType) (func(rows []byte, n int) []byte, bool) {
	type pf struct {
		pack       func(dst, src []byte)
		groupBlock int
	}
	f, ok := map[tensor.DType]pf{
		tensor.Q4_0: {packQ4_0, q4_0GroupBlock}, tensor.Q5_0: {packQ5_0, q5_0GroupBlock}, tensor.Q8_0: {packQ8_0, q8_0GroupBlock},
		tensor.Q4_K: {packQ4_K, q4KGroupBlock}, tensor.Q6_K: {packQ6_K, q6KGroupBlock},
	}[t]
	if !ok {
		return nil, false
	}
	return func(rows []byte, n int) []byte {
		nb := n / t.BlockSize()
		tsz := t.Traits().TypeSize
		rb := nb * tsz
		out := make([]byte, nb*f.groupBlock)
		src := make([]byte, groupRows*tsz)
		for b := range nb {
			for r := range groupRows {
				copy(src[r*tsz:(r+1)*tsz], rows[r*rb+b*tsz:])
			}
			f.pack(out[b*f.groupBlock:], src)
		}
		return out
	}, true
}
