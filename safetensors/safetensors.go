// Package safetensors reads (memory-mapped) and writes Hugging Face
// safetensors files, single or sharded.
//
// The format: an 8-byte little-endian header length N, N bytes of JSON
// mapping each tensor name to {"dtype", "shape", "data_offsets": [begin,
// end]} (offsets relative to the data that follows the header) plus an
// optional "__metadata__" object of strings, then the data. Everything a
// reader trusts is checked before use: the header length against the file,
// the JSON's size and nesting, each tensor's dtype, shape × element size
// against its byte range, ranges inside the data and not overlapping, and
// names unique.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"

	"github.com/loom-inference/loom/internal/mmap"
)

// Limits on what a header may declare.
const (
	MaxHeader  = 100 << 20 // bytes of JSON header
	MaxDepth   = 8         // JSON nesting
	MaxTensors = 1 << 20
	MaxDims    = 8
)

// DTypes maps each element type the format names to its size in bytes.
var DTypes = map[string]int{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2,
	"I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1,
	"BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1,
}

// Tensor is one stored tensor: row-major Shape (the last dimension varies
// fastest) and its bytes.
type Tensor struct {
	Name  string
	DType string
	Shape []int64
	Data  []byte
	off   int64 // where Data begins within the data section
}

// Elems is the number of elements.
func (t *Tensor) Elems() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is a parsed safetensors file.
type File struct {
	Path    string
	Meta    map[string]string
	Tensors []Tensor // in data order
	byName  map[string]int
	closer  func() error
	mapped  []byte // the file's mapping (nil when read whole)
}

// Open memory-maps and parses the file at path.
func Open(path string) (*File, error) {
	data, mapped, closer, err := mmap.Map(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Parse(path, data)
	if err != nil {
		closer()
		return nil, err
	}
	f.closer = closer
	if mapped {
		f.mapped = data
	}
	return f, nil
}

// Holds reports whether b lies within this file's read-only mapping (Open;
// false for a file read whole onto the heap): pages a reader no longer
// needs can then leave the process and fault back in unchanged.
func (f *File) Holds(b []byte) bool { return mmap.Within(b, f.mapped) }

// Close unmaps the file; its tensors' Data are invalid afterwards.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c()
}

// Tensor finds a tensor by name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	i, ok := f.byName[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

type entry struct {
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

// Parse reads a safetensors file held in b; path names it in errors.
func Parse(path string, b []byte) (*File, error) {
	fail := func(format string, args ...any) (*File, error) {
		return nil, fmt.Errorf("safetensors: %s: "+format, append([]any{path}, args...)...)
	}
	if len(b) < 8 {
		return fail("%d bytes: too short for the header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	switch {
	case n > uint64(len(b)-8):
		return fail("header of %d bytes in a file of %d", n, len(b))
	case n > MaxHeader:
		return fail("header of %d bytes is over the limit of %d", n, MaxHeader)
	}
	hdr, data := b[8:8+n], b[8+n:]
	if err := checkDepth(hdr); err != nil {
		return fail("%v", err)
	}
	f := &File{Path: path, byName: map[string]int{}}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fail("header is not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail("header: %v", err)
		}
		name := tok.(string) // object keys are strings
		if name == "__metadata__" {
			if f.Meta != nil {
				return fail("__metadata__ appears twice")
			}
			if err := dec.Decode(&f.Meta); err != nil {
				return fail("__metadata__: %v (want an object of strings)", err)
			}
			if f.Meta == nil {
				f.Meta = map[string]string{}
			}
			continue
		}
		if _, dup := f.byName[name]; dup {
			return fail("tensor %q appears twice", name)
		}
		if len(f.Tensors) >= MaxTensors {
			return fail("more than %d tensors", MaxTensors)
		}
		var e entry
		if err := dec.Decode(&e); err != nil {
			return fail("tensor %q: %v", name, err)
		}
		t, err := e.tensor(name, data)
		if err != nil {
			return fail("%v", err)
		}
		f.byName[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	if _, err := dec.Token(); err != nil {
		return fail("header: %v", err)
	}
	if dec.More() {
		return fail("header: data after the JSON object")
	}
	// Ranges must not overlap: sorted by start, each ends before the next.
	// Empty tensors occupy nothing and overlap nothing.
	sort.SliceStable(f.Tensors, func(i, j int) bool { return f.Tensors[i].off < f.Tensors[j].off })
	var end int64
	last := ""
	for _, t := range f.Tensors {
		if len(t.Data) == 0 {
			continue
		}
		if t.off < end {
			return fail("tensors %q and %q overlap", last, t.Name)
		}
		end, last = t.off+int64(len(t.Data)), t.Name
	}
	for i, t := range f.Tensors {
		f.byName[t.Name] = i
	}
	return f, nil
}

// tensor checks one header entry against the data section.
func (e *entry) tensor(name string, data []byte) (Tensor, error) {
	size, ok := DTypes[e.DType]
	if !ok {
		return Tensor{}, fmt.Errorf("tensor %q: unknown dtype %q", name, e.DType)
	}
	if len(e.Shape) > MaxDims {
		return Tensor{}, fmt.Errorf("tensor %q: %d dimensions (at most %d)", name, len(e.Shape), MaxDims)
	}
	if len(e.Offsets) != 2 {
		return Tensor{}, fmt.Errorf("tensor %q: data_offsets has %d values, want 2", name, len(e.Offsets))
	}
	n := int64(size)
	for _, d := range e.Shape {
		if d < 0 || d > math.MaxInt32 {
			return Tensor{}, fmt.Errorf("tensor %q: dimension %d in shape %v", name, d, e.Shape)
		}
		if d != 0 && n > math.MaxInt64/d {
			return Tensor{}, fmt.Errorf("tensor %q: shape %v overflows", name, e.Shape)
		}
		n *= d
	}
	begin, end := e.Offsets[0], e.Offsets[1]
	switch {
	case begin < 0 || end < begin:
		return Tensor{}, fmt.Errorf("tensor %q: data_offsets [%d, %d]", name, begin, end)
	case end > int64(len(data)):
		return Tensor{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] beyond the %d bytes of data", name, begin, end, len(data))
	case end-begin != n:
		return Tensor{}, fmt.Errorf("tensor %q: %s %v is %d bytes, data_offsets give %d", name, e.DType, e.Shape, n, end-begin)
	}
	return Tensor{Name: name, DType: e.DType, Shape: slices.Clone(e.Shape), Data: data[begin:end:end], off: begin}, nil
}

// checkDepth bounds the JSON nesting (outside strings) before decoding.
func checkDepth(b []byte) error {
	depth, inStr, esc := 0, false, false
	for _, c := range b {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			if depth++; depth > MaxDepth {
				return fmt.Errorf("header nests deeper than %d", MaxDepth)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// Write writes tensors (in the given order) and meta as a safetensors file.
func Write(w io.Writer, tensors []Tensor, meta map[string]string) error {
	hdr := map[string]any{}
	if len(meta) > 0 {
		hdr["__metadata__"] = meta
	}
	var off int64
	for _, t := range tensors {
		if _, dup := hdr[t.Name]; dup || t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: tensor name %q repeated or reserved", t.Name)
		}
		size, ok := DTypes[t.DType]
		if !ok {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		if t.Elems()*int64(size) != int64(len(t.Data)) {
			return fmt.Errorf("safetensors: tensor %q: %s %v with %d bytes", t.Name, t.DType, t.Shape, len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		hdr[t.Name] = entry{DType: t.DType, Shape: shape, Offsets: []int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	j, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(j)%8 != 0 { // the data starts 8-aligned, as the reference writer pads
		j = append(j, ' ')
	}
	if err := binary.Write(w, binary.LittleEndian, uint64(len(j))); err != nil {
		return err
	}
	if _, err := w.Write(j); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}
