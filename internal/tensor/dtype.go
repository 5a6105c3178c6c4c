// Package tensor is the ggml tensor types as Loom's internal packages name
// them: aliases of the public gguf.Type and its functions, so the type
// a GGUF file stores is the type the kernels take.
package tensor

import "github.com/loom-inference/loom/gguf"

// DType is a ggml tensor type id (gguf.Type).
type DType = gguf.Type

// Traits describes how a type is stored (gguf.Traits).
type Traits = gguf.Traits

// The ggml type ids.
const (
	F32     = gguf.F32
	F16     = gguf.F16
	Q4_0    = gguf.Q4_0
	Q4_1    = gguf.Q4_1
	Q5_0    = gguf.Q5_0
	Q5_1    = gguf.Q5_1
	Q8_0    = gguf.Q8_0
	Q8_1    = gguf.Q8_1
	Q2_K    = gguf.Q2_K
	Q3_K    = gguf.Q3_K
	Q4_K    = gguf.Q4_K
	Q5_K    = gguf.Q5_K
	Q6_K    = gguf.Q6_K
	Q8_K    = gguf.Q8_K
	IQ2_XXS = gguf.IQ2_XXS
	IQ2_XS  = gguf.IQ2_XS
	IQ3_XXS = gguf.IQ3_XXS
	IQ1_S   = gguf.IQ1_S
	IQ4_NL  = gguf.IQ4_NL
	IQ3_S   = gguf.IQ3_S
	IQ2_S   = gguf.IQ2_S
	IQ4_XS  = gguf.IQ4_XS
	I8      = gguf.I8
	I16     = gguf.I16
	I32     = gguf.I32
	I64     = gguf.I64
	F64     = gguf.F64
	IQ1_M   = gguf.IQ1_M
	BF16    = gguf.BF16
	MXFP4   = gguf.MXFP4
)

// ParseDType maps a ggml type name ("Q4_K") to its id.
func ParseDType(name string) (DType, bool) { return gguf.ParseType(name) }

// RowBytes returns the bytes of a row of n elements of type t.
func RowBytes(t DType, n uint64) (uint64, error) { return gguf.RowBytes(t, n) }

// Bytes returns the byte size of a tensor of type t with dims ne (ggml order).
func Bytes(t DType, ne []uint64) (uint64, error) { return gguf.Bytes(t, ne) }
