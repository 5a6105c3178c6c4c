package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Writer builds a GGUF v3 file: metadata and tensors are added in order and
// written out by WriteTo with each tensor's data aligned.
type Writer struct {
	KVs       []KV
	tensors   []TensorInfo
	data      [][]byte
	Alignment uint64
}

// NewWriter returns a Writer with the default alignment.
func NewWriter() *Writer { return &Writer{Alignment: DefaultAlignment} }

// Set adds a metadata entry. v may be any scalar Go type of the GGUF set,
// string, Array, or a slice of those scalars or strings.
func (w *Writer) Set(key string, v any) {
	var val Value
	switch x := v.(type) {
	case Value:
		val = x
	case Array:
		val = Value{ArrayT, x}
	case []string:
		val = Value{ArrayT, Array{String, x}}
	case []float32:
		val = Value{ArrayT, Array{Float32, x}}
	case []int32:
		val = Value{ArrayT, Array{Int32, x}}
	case []uint32:
		val = Value{ArrayT, Array{Uint32, x}}
	default:
		val = Value{scalarType(v), v}
	}
	w.KVs = append(w.KVs, KV{key, val})
}

func scalarType(v any) ValueType {
	switch v.(type) {
	case uint8:
		return Uint8
	case int8:
		return Int8
	case uint16:
		return Uint16
	case int16:
		return Int16
	case uint32:
		return Uint32
	case int32:
		return Int32
	case float32:
		return Float32
	case bool:
		return Bool
	case string:
		return String
	case uint64:
		return Uint64
	case int64:
		return Int64
	case float64:
		return Float64
	}
	panic(fmt.Sprintf("gguf: unsupported metadata value %T", v))
}

// AddTensor adds a tensor of type t with dims (ggml order) and its raw data
// (nil: supplied later to Stream).
func (w *Writer) AddTensor(name string, t Type, dims []uint64, data []byte) error {
	size, err := Bytes(t, dims)
	if err != nil {
		return fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	if data != nil && uint64(len(data)) != size {
		return fmt.Errorf("gguf: tensor %q: %d bytes of data, shape needs %d", name, len(data), size)
	}
	var off uint64
	if n := len(w.tensors); n > 0 {
		last := w.tensors[n-1]
		off = alignUp(last.Offset+last.Size, w.Alignment)
	}
	w.tensors = append(w.tensors, TensorInfo{Name: name, Type: t, Dims: dims, Offset: off, Size: size})
	w.data = append(w.data, data)
	return nil
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

type encoder struct {
	w   *bufio.Writer
	n   uint64
	err error
}

func (e *encoder) write(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
		e.n += uint64(len(b))
	}
}
func (e *encoder) u32(v uint32) { e.write(binary.LittleEndian.AppendUint32(nil, v)) }
func (e *encoder) u64(v uint64) { e.write(binary.LittleEndian.AppendUint64(nil, v)) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.write([]byte(s)) }

func (e *encoder) scalar(v any) {
	le := binary.LittleEndian
	switch x := v.(type) {
	case uint8:
		e.write([]byte{x})
	case int8:
		e.write([]byte{byte(x)})
	case uint16:
		e.write(le.AppendUint16(nil, x))
	case int16:
		e.write(le.AppendUint16(nil, uint16(x)))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		e.write([]byte{b})
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case Array:
		e.array(x)
	default:
		e.err = fmt.Errorf("gguf: cannot encode %T", v)
	}
}

func (e *encoder) array(a Array) {
	e.u32(uint32(a.Elem))
	e.u64(uint64(a.Len()))
	forEach(a.Values, e.scalar)
}

// forEach calls fn on each element of a typed slice.
func forEach(s any, fn func(any)) {
	switch v := s.(type) {
	case []uint8:
		for _, x := range v {
			fn(x)
		}
	case []int8:
		for _, x := range v {
			fn(x)
		}
	case []uint16:
		for _, x := range v {
			fn(x)
		}
	case []int16:
		for _, x := range v {
			fn(x)
		}
	case []uint32:
		for _, x := range v {
			fn(x)
		}
	case []int32:
		for _, x := range v {
			fn(x)
		}
	case []float32:
		for _, x := range v {
			fn(x)
		}
	case []bool:
		for _, x := range v {
			fn(x)
		}
	case []string:
		for _, x := range v {
			fn(x)
		}
	case []uint64:
		for _, x := range v {
			fn(x)
		}
	case []int64:
		for _, x := range v {
			fn(x)
		}
	case []float64:
		for _, x := range v {
			fn(x)
		}
	case []Array:
		for _, x := range v {
			fn(x)
		}
	}
}

// WriteTo writes the file.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	return w.Stream(out, func(i int) ([]byte, error) { return w.data[i], nil })
}

// Stream writes the file taking each tensor's data from data(i), in order,
// when its turn comes: tensors added with nil data are produced while the
// file is written, and only one needs to be in memory. data(i) must return
// exactly the bytes the tensor's type and dims call for.
func (w *Writer) Stream(out io.Writer, data func(i int) ([]byte, error)) (int64, error) {
	e := &encoder{w: bufio.NewWriterSize(out, 1<<20)}
	e.u32(Magic)
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	kvs := w.KVs
	if w.Alignment != DefaultAlignment {
		kvs = append([]KV{{"general.alignment", Value{Uint32, uint32(w.Alignment)}}}, kvs...)
	}
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.Type))
		e.scalar(kv.Value.V)
	}
	for _, t := range w.tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(t.Offset)
	}
	e.write(make([]byte, alignUp(e.n, w.Alignment)-e.n))
	base := e.n
	for i, t := range w.tensors {
		e.write(make([]byte, base+t.Offset-e.n))
		if e.err != nil {
			break
		}
		b, err := data(i)
		switch {
		case err != nil:
			e.err = err
		case uint64(len(b)) != t.Size:
			e.err = fmt.Errorf("gguf: tensor %q: %d bytes of data, shape needs %d", t.Name, len(b), t.Size)
		}
		e.write(b)
	}
	if e.err == nil {
		e.err = e.w.Flush()
	}
	return int64(e.n), e.err
}
