package kvcache

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Types are the element types of the cache's keys and values (llama.cpp's
// --cache-type-k/-v). F16, the default, keeps keys transposed within their
// block for the exact attention kernels; Q8_0 keeps keys in columns within
// their block (kernels.PutQ8Col: each 32-element group's scales, then
// four-byte columns, so one vector holds 16 positions' same elements);
// any other type stores each position's key as a row of that type (ggml's
// block layout along the row, each head's part a whole number of blocks),
// as values always are. The values stored are ggml's in every layout.
type Types struct{ K, V tensor.DType }

// DefaultTypes is llama.cpp's default cache: F16 keys and values.
var DefaultTypes = Types{tensor.F16, tensor.F16}

// cacheTypes are the types a cache may hold, by llama.cpp's names.
var cacheTypes = map[string]tensor.DType{
	"f16": tensor.F16, "bf16": tensor.BF16, "f32": tensor.F32, "q8_0": tensor.Q8_0, "q4_0": tensor.Q4_0,
}

// ParseType reads a cache type by llama.cpp's name (f16, bf16, f32, q8_0,
// q4_0; any case); "" is F16.
func ParseType(name string) (tensor.DType, error) {
	if name == "" {
		return tensor.F16, nil
	}
	t, ok := cacheTypes[strings.ToLower(name)]
	if !ok {
		return 0, fmt.Errorf("KV cache type %q is not one of f16, bf16, f32, q8_0, q4_0", name)
	}
	return t, nil
}

// Check reports whether heads of headDim elements can be stored in t: a
// quantized type's block must divide the head (llama.cpp refuses the same).
func (t Types) Check(headDim int) error {
	for _, x := range []tensor.DType{t.K, t.V} {
		if _, ok := typeName(x); !ok {
			return fmt.Errorf("KV cache type %s is not supported (f16, bf16, f32, q8_0, q4_0)", x)
		}
		if bs := x.BlockSize(); headDim%bs != 0 {
			return fmt.Errorf("KV cache type %s: its blocks of %d do not divide the head width %d", x, bs, headDim)
		}
	}
	return nil
}

func typeName(t tensor.DType) (string, bool) {
	for n, x := range cacheTypes {
		if x == t {
			return n, true
		}
	}
	return "", false
}

// words is the number of uint16 words n elements of t take: every cache
// type's block is a whole number of words (Q8_0 34 bytes, Q4_0 18).
func words(t tensor.DType, n int) int {
	b, err := tensor.RowBytes(t, uint64(n))
	if err != nil {
		panic(err) // checked by Types.Check when the pool was made
	}
	return int(b) / 2
}

// Transposed reports whether layer keys of type t are stored transposed
// within their block (F16) rather than as rows.
func Transposed(t tensor.DType) bool { return t == tensor.F16 }

// Columns reports whether layer keys of type t are stored in columns
// within their block (Q8_0, kernels.PutQ8Col's layout) rather than as rows.
func Columns(t tensor.DType) bool { return t == tensor.Q8_0 }

// The column layout's block is the cache's.
var _ [BlockSize - kernels.Q8ColSlots]struct{}
var _ [kernels.Q8ColSlots - BlockSize]struct{}

// inBlock reports whether keys of type t are laid out per block (F16
// transposed, Q8_0 in columns): a slot's key is then found from its block's
// start and its slot, not as one row.
func inBlock(t tensor.DType) bool { return Transposed(t) || Columns(t) }

// colBlock is the bytes of the column block holding the key at word k of a
// layer's K array (kw words a position) and the key's slot in it.
func colBlock(ks []uint16, k, kw int) ([]byte, int) {
	i := k % BlockSize
	base := k - i
	return Bytes(ks[base : base+BlockSize*kw]), i
}

// HeadWords is the words one head of headDim elements takes in a row of t.
func HeadWords(t tensor.DType, headDim int) int { return words(t, headDim) }

// Bytes views a layer's array as bytes (the row types' blocks).
func Bytes(w []uint16) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 2*len(w))
}

// storeRow writes x as a row of type t at dst (words).
func storeRow(t tensor.DType, dst []uint16, x []float32) {
	if t == tensor.F16 {
		kernels.F32ToF16s(dst[:len(x)], x)
		return
	}
	n := words(t, len(x))
	if err := kernels.QuantizeRow(t, Bytes(dst[:n]), x); err != nil {
		panic(err) // types and widths were checked when the pool was made
	}
}

func f16(h uint16) float32 { return quant.F16ToF32(h) }

// dequantRow reads a row of t.
func dequantRow(t tensor.DType, y []float32, x []byte) error { return quant.Dequantize(t, y, x) }
