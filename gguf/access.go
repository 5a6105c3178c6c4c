package gguf

import (
	"fmt"

	"github.com/loom-inference/loom/internal/mmap"
)

// Open memory-maps and parses the file at path.
func Open(path string) (*File, error) {
	data, mapped, closer, err := mmap.Map(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		closer()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.Path = path
	f.closer, f.mapped = closer, mapped
	return f, nil
}

// Holds reports whether b lies within the file's read-only mapping (Open;
// false for a file read whole onto the heap): pages a reader no longer
// needs can then leave the process and fault back in unchanged.
func (f *File) Holds(b []byte) bool { return f.mapped && mmap.Within(b, f.data) }

// Get returns the metadata value stored under key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kv[key]
	if !ok {
		return Value{}, false
	}
	return f.KVs[i].Value, true
}

// String returns a string value; ok is false when absent or of another type.
func (f *File) String(key string) (string, bool) {
	v, ok := f.Get(key)
	if !ok {
		return "", false
	}
	s, ok := v.V.(string)
	return s, ok
}

// Uint returns a non-negative integer value of any integer type.
func (f *File) Uint(key string) (uint64, error) {
	v, ok := f.Get(key)
	if !ok {
		return 0, fmt.Errorf("gguf: missing metadata %q", key)
	}
	if u, ok := v.V.(uint64); ok { // all of it, past int64's range too
		return u, nil
	}
	i, ok := v.Int()
	if !ok || v.Type == Bool {
		return 0, fmt.Errorf("gguf: metadata %q has type %s, want an integer", key, v.Type)
	}
	if i < 0 {
		return 0, fmt.Errorf("gguf: metadata %q is negative (%d)", key, i)
	}
	return uint64(i), nil
}

// UintOr returns Uint(key), or def when the key is absent.
func (f *File) UintOr(key string, def uint64) (uint64, error) {
	if _, ok := f.Get(key); !ok {
		return def, nil
	}
	return f.Uint(key)
}

// Float returns a numeric value as float64.
func (f *File) Float(key string) (float64, error) {
	v, ok := f.Get(key)
	if !ok {
		return 0, fmt.Errorf("gguf: missing metadata %q", key)
	}
	x, ok := v.Float()
	if !ok {
		return 0, fmt.Errorf("gguf: metadata %q has type %s, want a number", key, v.Type)
	}
	return x, nil
}

// FloatOr returns Float(key), or def when the key is absent.
func (f *File) FloatOr(key string, def float64) (float64, error) {
	if _, ok := f.Get(key); !ok {
		return def, nil
	}
	return f.Float(key)
}

// Bool returns a bool value, def when absent.
func (f *File) Bool(key string, def bool) (bool, error) {
	v, ok := f.Get(key)
	if !ok {
		return def, nil
	}
	b, ok := v.V.(bool)
	if !ok {
		return def, fmt.Errorf("gguf: metadata %q has type %s, want bool", key, v.Type)
	}
	return b, nil
}

// ArrayOf returns the array stored under key, checking the element type.
func (f *File) ArrayOf(key string, elem ValueType) (Array, bool, error) {
	v, ok := f.Get(key)
	if !ok {
		return Array{}, false, nil
	}
	a, isArr := v.V.(Array)
	if !isArr {
		return Array{}, true, fmt.Errorf("gguf: metadata %q has type %s, want array of %s", key, v.Type, elem)
	}
	if a.Elem != elem {
		return Array{}, true, fmt.Errorf("gguf: metadata %q is an array of %s, want %s", key, a.Elem, elem)
	}
	return a, true, nil
}

// Strings returns a string array (nil when absent).
func (f *File) Strings(key string) ([]string, error) {
	a, ok, err := f.ArrayOf(key, String)
	if !ok || err != nil {
		return nil, err
	}
	return a.Values.([]string), nil
}

// Float32s returns a float32 array (nil when absent).
func (f *File) Float32s(key string) ([]float32, error) {
	a, ok, err := f.ArrayOf(key, Float32)
	if !ok || err != nil {
		return nil, err
	}
	return a.Values.([]float32), nil
}

// Int32s returns an int32 array (nil when absent).
func (f *File) Int32s(key string) ([]int32, error) {
	a, ok, err := f.ArrayOf(key, Int32)
	if !ok || err != nil {
		return nil, err
	}
	return a.Values.([]int32), nil
}

// Tensor returns the index entry of the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensor[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of t (a view of the mapped file; bounds were
// checked when the file was parsed).
func (f *File) TensorData(t *TensorInfo) []byte {
	start := f.DataOffset + t.Offset
	return f.data[start : start+t.Size : start+t.Size]
}
