package gguf

import (
	"fmt"
	"math"
)

// ValueType is a GGUF metadata value type id.
type ValueType uint32

// GGUF metadata value types (gguf.h, enum gguf_type).
const (
	Uint8   ValueType = 0
	Int8    ValueType = 1
	Uint16  ValueType = 2
	Int16   ValueType = 3
	Uint32  ValueType = 4
	Int32   ValueType = 5
	Float32 ValueType = 6
	Bool    ValueType = 7
	String  ValueType = 8
	ArrayT  ValueType = 9
	Uint64  ValueType = 10
	Int64   ValueType = 11
	Float64 ValueType = 12
)

// scalarSize is the encoded size of each fixed-size type; 0 for string and array.
var scalarSize = [...]int{Uint8: 1, Int8: 1, Uint16: 2, Int16: 2, Uint32: 4, Int32: 4,
	Float32: 4, Bool: 1, String: 0, ArrayT: 0, Uint64: 8, Int64: 8, Float64: 8}

var typeNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"}

func (t ValueType) valid() bool { return int(t) < len(typeNames) }

func (t ValueType) String() string {
	if !t.valid() {
		return fmt.Sprintf("type(%d)", uint32(t))
	}
	return typeNames[t]
}

// minSize is the fewest bytes one encoded value of type t can take; it bounds
// how many elements an array can claim given the bytes left in the file.
func (t ValueType) minSize() int {
	switch t {
	case String:
		return 8
	case ArrayT:
		return 12
	}
	return scalarSize[t]
}

// Value is one metadata value. V holds uint8, int8, uint16, int16, uint32,
// int32, float32, bool, string, uint64, int64, float64 or Array.
type Value struct {
	Type ValueType
	V    any
}

// Array is a typed GGUF array. Values is a slice of the element's Go type
// ([]uint8, []int32, []float32, []string, []bool, []Array, ...).
type Array struct {
	Elem   ValueType
	Values any
}

// Len is the number of elements.
func (a Array) Len() int {
	switch v := a.Values.(type) {
	case []uint8:
		return len(v)
	case []int8:
		return len(v)
	case []uint16:
		return len(v)
	case []int16:
		return len(v)
	case []uint32:
		return len(v)
	case []int32:
		return len(v)
	case []float32:
		return len(v)
	case []bool:
		return len(v)
	case []string:
		return len(v)
	case []uint64:
		return len(v)
	case []int64:
		return len(v)
	case []float64:
		return len(v)
	case []Array:
		return len(v)
	}
	return 0
}

// Int returns element i of an integer (or bool) array as int64; ok is
// false for other element types or an index out of range.
func (a Array) Int(i int) (int64, bool) {
	if i < 0 || i >= a.Len() {
		return 0, false
	}
	switch x := a.Values.(type) {
	case []uint8:
		return Value{V: x[i]}.Int()
	case []int8:
		return Value{V: x[i]}.Int()
	case []uint16:
		return Value{V: x[i]}.Int()
	case []int16:
		return Value{V: x[i]}.Int()
	case []uint32:
		return Value{V: x[i]}.Int()
	case []int32:
		return Value{V: x[i]}.Int()
	case []uint64:
		return Value{V: x[i]}.Int()
	case []int64:
		return Value{V: x[i]}.Int()
	case []bool:
		return Value{V: x[i]}.Int()
	}
	return 0, false
}

// Int returns an integer value of any integer width as int64.
func (v Value) Int() (int64, bool) {
	switch x := v.V.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// Float returns a numeric value as float64.
func (v Value) Float() (float64, bool) {
	switch x := v.V.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if i, ok := v.Int(); ok {
		return float64(i), true
	}
	return 0, false
}

// String formats the value for display, abbreviating long arrays.
func (v Value) String() string {
	if a, ok := v.V.(Array); ok {
		n := a.Len()
		if n > 8 {
			return fmt.Sprintf("[%s × %d]", a.Elem, n)
		}
		return fmt.Sprintf("%v", a.Values)
	}
	if s, ok := v.V.(string); ok {
		if len(s) > 80 {
			return fmt.Sprintf("%q… (%d bytes)", s[:80], len(s))
		}
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v.V)
}
