package gguf

// Tensor types: the ggml type ids a GGUF file stores and their storage
// traits (block size and bytes per block). The numbers behind each type
// (dequantization, products) live in Loom's internal packages.

import (
	"fmt"
	"math/bits"
)

// Type is a ggml tensor type id, as stored in GGUF tensor infos.
type Type uint32

// The ggml type ids (ggml.h, enum ggml_type). Gaps are ids ggml retired.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	MXFP4   Type = 39
)

// Traits describes how a type is stored: BlockSize elements packed into
// TypeSize bytes. A row's length must be a multiple of BlockSize.
type Traits struct {
	Name      string
	BlockSize int
	TypeSize  int
}

// traits is indexed by Type; a zero entry means ggml has no such id.
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
	MXFP4:   {"MXFP4", 32, 1 + 16},
}

// Known reports whether t is a ggml type id (whether or not Loom computes with it).
func (t Type) Known() bool { return int(t) < len(traits) && traits[t].BlockSize != 0 }

// Traits returns t's storage traits; the zero Traits for an unknown id.
func (t Type) Traits() Traits {
	if !t.Known() {
		return Traits{}
	}
	return traits[t]
}

func (t Type) String() string {
	if !t.Known() {
		return fmt.Sprintf("type(%d)", uint32(t))
	}
	return traits[t].Name
}

// BlockSize is the number of elements in one block of t.
func (t Type) BlockSize() int { return t.Traits().BlockSize }

// ParseType maps a ggml type name ("Q4_K") to its id.
func ParseType(name string) (Type, bool) {
	for i, tr := range traits {
		if tr.BlockSize != 0 && tr.Name == name {
			return Type(i), true
		}
	}
	return 0, false
}

// RowBytes returns the bytes of a row of n elements of type t, with an error
// when n is not a whole number of blocks or the size overflows.
func RowBytes(t Type, n uint64) (uint64, error) {
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
func Bytes(t Type, ne []uint64) (uint64, error) {
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
