// Package tensor names the ggml tensor types and their storage traits
// (block size and bytes per block). It holds no math: the numbers behind each
// type live in internal/quant.
package tensor

import (
	"fmt"
	"math/bits"
)

// DType is a ggml tensor type id, as stored in GGUF tensor infos.
type DType uint32

// The ggml type ids (ggml.h, enum ggml_type). Gaps are ids ggml retired.
const (
	F32     DType = 0
	F16     DType = 1
	Q4_0    DType = 2
	Q4_1    DType = 3
	Q5_0    DType = 6
	Q5_1    DType = 7
	Q8_0    DType = 8
	Q8_1    DType = 9
	Q2_K    DType = 10
	Q3_K    DType = 11
	Q4_K    DType = 12
	Q5_K    DType = 13
	Q6_K    DType = 14
	Q8_K    DType = 15
	IQ2_XXS DType = 16
	IQ2_XS  DType = 17
	IQ3_XXS DType = 18
	IQ1_S   DType = 19
	IQ4_NL  DType = 20
	IQ3_S   DType = 21
	IQ2_S   DType = 22
	IQ4_XS  DType = 23
	I8      DType = 24
	I16     DType = 25
	I32     DType = 26
	I64     DType = 27
	F64     DType = 28
	IQ1_M   DType = 29
	BF16    DType = 30
)

// Traits describes how a type is stored: BlockSize elements packed into
// TypeSize bytes. A row's length must be a multiple of BlockSize.
type Traits struct {
	Name      string
	BlockSize int
	TypeSize  int
}

// traits is indexed by DType; a zero entry means ggml has no such id.
// Sizes follow ggml-common.h's static_asserts.
var traits = [...]Traits{
	F32:     {"F32", 1, 4},
	F16:     {"F16", 1, 2},
	Q4_0:    {"Q4_0", 32, 2 + 16},
	Q4_1:    {"Q4_1", 32, 2 + 2 + 16},
	Q5_0:    {"Q5_0", 32, 2 + 4 + 16},
	Q5_1:    {"Q5_1", 32, 2 + 2 + 4 + 16},
	Q8_0:    {"Q8_0", 32, 2 + 32},
	Q8_1:    {"Q8_1", 32, 2 + 2 + 32},
	Q2_K:    {"Q2_K", 256, 16 + 64 + 2 + 2},
	Q3_K:    {"Q3_K", 256, 32 + 64 + 12 + 2},
	Q4_K:    {"Q4_K", 256, 2 + 2 + 12 + 128},
	Q5_K:    {"Q5_K", 256, 2 + 2 + 12 + 32 + 128},
	Q6_K:    {"Q6_K", 256, 128 + 64 + 16 + 2},
	Q8_K:    {"Q8_K", 256, 4 + 256 + 2*16},
	IQ2_XXS: {"IQ2_XXS", 256, 2 + 64},
	IQ2_XS:  {"IQ2_XS", 256, 2 + 64 + 8},
	IQ3_XXS: {"IQ3_XXS", 256, 2 + 96},
	IQ1_S:   {"IQ1_S", 256, 2 + 32 + 16},
	IQ4_NL:  {"IQ4_NL", 32, 2 + 16},
	IQ3_S:   {"IQ3_S", 256, 2 + 64 + 8 + 32 + 4},
	IQ2_S:   {"IQ2_S", 256, 2 + 64 + 16},
	IQ4_XS:  {"IQ4_XS", 256, 2 + 2 + 4 + 128},
	I8:      {"I8", 1, 1},
	I16:     {"I16", 1, 2},
	I32:     {"I32", 1, 4},
	I64:     {"I64", 1, 8},
	F64:     {"F64", 1, 8},
	IQ1_M:   {"IQ1_M", 256, 32 + 16 + 8},
	BF16:    {"BF16", 1, 2},
}

// Known reports whether t is a ggml type id (whether or not Loom computes with it).
func (t DType) Known() bool { return int(t) < len(traits) && traits[t].BlockSize != 0 }

// Traits returns t's storage traits; the zero Traits for an unknown id.
func (t DType) Traits() Traits {
	if !t.Known() {
		return Traits{}
	}
	return traits[t]
}

func (t DType) String() string {
	if !t.Known() {
		return fmt.Sprintf("type(%d)", uint32(t))
	}
	return traits[t].Name
}

// BlockSize is the number of elements in one block of t.
func (t DType) BlockSize() int { return t.Traits().BlockSize }

// ParseDType maps a ggml type name ("Q4_K") to its id.
func ParseDType(name string) (DType, bool) {
	for i, tr := range traits {
		if tr.BlockSize != 0 && tr.Name == name {
			return DType(i), true
		}
	}
	return 0, false
}

// RowBytes returns the bytes of a row of n elements of type t, with an error
// when n is not a whole number of blocks or the size overflows.
func RowBytes(t DType, n uint64) (uint64, error) {
	tr := t.Traits()
	if tr.BlockSize == 0 {
		return 0, fmt.Errorf("unknown tensor type %d", uint32(t))
	}
	if n%uint64(tr.BlockSize) != 0 {
		return 0, fmt.Errorf("row length %d is not a multiple of %s block size %d", n, tr.Name, tr.BlockSize)
	}
	hi, lo := bits.Mul64(n/uint64(tr.BlockSize), uint64(tr.TypeSize))
	if hi != 0 {
		return 0, fmt.Errorf("row of %d %s elements overflows", n, tr.Name)
	}
	return lo, nil
}

// Bytes returns the byte size of a tensor of type t with dims ne (ne[0] is
// the row length, ggml order), checking every multiplication for overflow.
func Bytes(t DType, ne []uint64) (uint64, error) {
	if len(ne) == 0 {
		return 0, fmt.Errorf("tensor with no dimensions")
	}
	size, err := RowBytes(t, ne[0])
	if err != nil {
		return 0, err
	}
	for _, d := range ne[1:] {
		hi, lo := bits.Mul64(size, d)
		if hi != 0 {
			return 0, fmt.Errorf("tensor size overflows (dims %v, type %s)", ne, t)
		}
		size = lo
	}
	return size, nil
}
