// Package gguf reads and writes GGUF model files (versions 2 and 3).
//
// The reader treats every number in the file as untrusted: counts, lengths,
// shapes and offsets are checked against the bytes actually present before
// anything is allocated, so a malformed file yields an error naming the field
// at fault rather than a panic, a hang or a huge allocation.
package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sort"
)

// Magic is "GGUF" read as a little-endian uint32.
const Magic = 0x46554747

// DefaultAlignment applies when general.alignment is absent.
const DefaultAlignment = 32

// Limits on structure that no real file comes near; they stop pathological
// files early with a clear message.
const (
	maxDims       = 4
	maxArrayDepth = 8
	maxKeyLen     = 1 << 16
)

// TensorInfo is one entry of the tensor index.
type TensorInfo struct {
	Name   string
	Type   Type
	Dims   []uint64 // ggml order: Dims[0] is the row length
	Offset uint64   // relative to the start of the data section
	Size   uint64   // bytes
}

// Elements is the number of elements (checked not to overflow at parse time).
func (t *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// KV is one metadata entry, in file order.
type KV struct {
	Key   string
	Value Value
}

// File is a parsed GGUF file. Tensor data is a view of the mapped file.
type File struct {
	Path       string
	Version    uint32
	Alignment  uint64
	KVs        []KV
	Tensors    []TensorInfo
	DataOffset uint64 // absolute offset of the data section

	kv     map[string]int
	tensor map[string]int
	data   []byte // the whole file
	closer func() error
	mapped bool // data is a file mapping (Open)
}

// Parse parses a GGUF image held in memory. The File keeps a reference to b.
func Parse(b []byte) (*File, error) {
	f := &File{data: b}
	if err := f.parse(); err != nil {
		return nil, err
	}
	return f, nil
}

// Close releases the mapping (if any). Tensor data must not be used after.
func (f *File) Close() error {
	if f.closer != nil {
		c := f.closer
		f.closer = nil
		return c()
	}
	return nil
}

// Bytes returns the whole file image.
func (f *File) Bytes() []byte { return f.data }

type decoder struct {
	b   []byte
	off uint64
}

func (d *decoder) remaining() uint64 { return uint64(len(d.b)) - d.off }

func (d *decoder) need(n uint64, what string) error {
	if n > d.remaining() {
		return fmt.Errorf("%s at offset %d: needs %d bytes, %d left (truncated file?)", what, d.off, n, d.remaining())
	}
	return nil
}

func (d *decoder) u32(what string) (uint32, error) {
	if err := d.need(4, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v, nil
}

func (d *decoder) u64(what string) (uint64, error) {
	if err := d.need(8, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v, nil
}

func (d *decoder) str(what string) (string, error) {
	n, err := d.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > d.remaining() {
		return "", fmt.Errorf("%s at offset %d: length %d exceeds the %d bytes left", what, d.off-8, n, d.remaining())
	}
	s := string(d.b[d.off : d.off+n])
	d.off += n
	return s, nil
}

func (f *File) parse() error {
	d := &decoder{b: f.data}
	magic, err := d.u32("magic")
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if magic != Magic {
		return fmt.Errorf("gguf: bad magic %#08x (want %#08x \"GGUF\")", magic, Magic)
	}
	if f.Version, err = d.u32("version"); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if f.Version != 2 && f.Version != 3 {
		return fmt.Errorf("gguf: unsupported version %d (want 2 or 3)", f.Version)
	}
	nTensors, err := d.u64("tensor count")
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	nKV, err := d.u64("metadata count")
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	// Each KV takes at least 8 (key length) + 4 (type) + 1 bytes; each tensor
	// info at least 8 + 4 + 8 + 4 + 8. Counts beyond what the file can hold
	// are rejected before anything is allocated for them.
	if nKV > d.remaining()/13 {
		return fmt.Errorf("gguf: metadata count %d cannot fit in the %d bytes left", nKV, d.remaining())
	}
	if nTensors > d.remaining()/32 {
		return fmt.Errorf("gguf: tensor count %d cannot fit in the %d bytes left", nTensors, d.remaining())
	}

	f.KVs = make([]KV, 0, nKV)
	f.kv = make(map[string]int, nKV)
	for i := uint64(0); i < nKV; i++ {
		key, err := d.str(fmt.Sprintf("metadata key #%d", i))
		if err != nil {
			return fmt.Errorf("gguf: %w", err)
		}
		if len(key) > maxKeyLen {
			return fmt.Errorf("gguf: metadata key #%d is %d bytes long (limit %d)", i, len(key), maxKeyLen)
		}
		if _, dup := f.kv[key]; dup {
			return fmt.Errorf("gguf: duplicate metadata key %q", key)
		}
		t, err := d.u32(fmt.Sprintf("type of %q", key))
		if err != nil {
			return fmt.Errorf("gguf: %w", err)
		}
		v, err := d.value(ValueType(t), key, 0)
		if err != nil {
			return fmt.Errorf("gguf: %w", err)
		}
		f.kv[key] = len(f.KVs)
		f.KVs = append(f.KVs, KV{key, v})
	}

	f.Alignment = DefaultAlignment
	if v, ok := f.Get("general.alignment"); ok {
		a, isInt := v.Int()
		if !isInt || v.Type != Uint32 {
			return fmt.Errorf("gguf: general.alignment has type %s, want u32", v.Type)
		}
		if a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("gguf: general.alignment %d is not a power of two", a)
		}
		f.Alignment = uint64(a)
	}

	f.Tensors = make([]TensorInfo, 0, nTensors)
	f.tensor = make(map[string]int, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		t, err := d.tensorInfo(i)
		if err != nil {
			return fmt.Errorf("gguf: %w", err)
		}
		if _, dup := f.tensor[t.Name]; dup {
			return fmt.Errorf("gguf: duplicate tensor name %q", t.Name)
		}
		f.tensor[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}

	// The data section starts at the next multiple of the alignment.
	pad := (f.Alignment - d.off%f.Alignment) % f.Alignment
	f.DataOffset = d.off + pad
	if nTensors > 0 && f.DataOffset > uint64(len(f.data)) {
		return fmt.Errorf("gguf: data section would start at %d, past the end of the file (%d bytes)", f.DataOffset, len(f.data))
	}
	return f.checkTensorData()
}

func (d *decoder) tensorInfo(i uint64) (TensorInfo, error) {
	var t TensorInfo
	name, err := d.str(fmt.Sprintf("tensor #%d name", i))
	if err != nil {
		return t, err
	}
	t.Name = name
	nd, err := d.u32(fmt.Sprintf("tensor %q dimension count", name))
	if err != nil {
		return t, err
	}
	if nd == 0 || nd > maxDims {
		return t, fmt.Errorf("tensor %q: %d dimensions (want 1 to %d)", name, nd, maxDims)
	}
	t.Dims = make([]uint64, nd)
	for j := range t.Dims {
		if t.Dims[j], err = d.u64(fmt.Sprintf("tensor %q dimension %d", name, j)); err != nil {
			return t, err
		}
		if t.Dims[j] == 0 || t.Dims[j] > math.MaxInt64 {
			return t, fmt.Errorf("tensor %q: dimension %d is %d", name, j, t.Dims[j])
		}
	}
	n := uint64(1)
	for _, dim := range t.Dims {
		hi, lo := bits.Mul64(n, dim)
		if hi != 0 || lo > math.MaxInt64 {
			return t, fmt.Errorf("tensor %q: element count of dims %v overflows", name, t.Dims)
		}
		n = lo
	}
	ty, err := d.u32(fmt.Sprintf("tensor %q type", name))
	if err != nil {
		return t, err
	}
	t.Type = Type(ty)
	if !t.Type.Known() {
		return t, fmt.Errorf("tensor %q: unknown ggml type id %d", name, ty)
	}
	if t.Size, err = Bytes(t.Type, t.Dims); err != nil {
		return t, fmt.Errorf("tensor %q: %w", name, err)
	}
	if t.Offset, err = d.u64(fmt.Sprintf("tensor %q offset", name)); err != nil {
		return t, err
	}
	return t, nil
}

// checkTensorData checks that every tensor lies inside the file, is aligned
// and overlaps no other tensor.
func (f *File) checkTensorData() error {
	avail := uint64(len(f.data)) - min(f.DataOffset, uint64(len(f.data)))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset%f.Alignment != 0 {
			return fmt.Errorf("gguf: tensor %q: offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		end, carry := bits.Add64(t.Offset, t.Size, 0)
		if carry != 0 || end > avail {
			return fmt.Errorf("gguf: tensor %q: data ends past the file (offset %d, size %d, data section %d bytes)",
				t.Name, t.Offset, t.Size, avail)
		}
	}
	idx := make([]int, len(f.Tensors))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return f.Tensors[idx[a]].Offset < f.Tensors[idx[b]].Offset })
	for k := 1; k < len(idx); k++ {
		prev, cur := &f.Tensors[idx[k-1]], &f.Tensors[idx[k]]
		if prev.Offset+prev.Size > cur.Offset {
			return fmt.Errorf("gguf: tensors %q and %q overlap (offsets %d+%d and %d)",
				prev.Name, cur.Name, prev.Offset, prev.Size, cur.Offset)
		}
	}
	return nil
}

func (d *decoder) value(t ValueType, key string, depth int) (Value, error) {
	if !t.valid() {
		return Value{}, fmt.Errorf("metadata %q: unknown value type %d", key, uint32(t))
	}
	if t == ArrayT {
		a, err := d.array(key, depth)
		return Value{ArrayT, a}, err
	}
	if t == String {
		s, err := d.str(fmt.Sprintf("metadata %q", key))
		return Value{String, s}, err
	}
	n := uint64(scalarSize[t])
	if err := d.need(n, fmt.Sprintf("metadata %q", key)); err != nil {
		return Value{}, err
	}
	b := d.b[d.off:]
	d.off += n
	return Value{t, decodeScalar(t, b)}, nil
}

func decodeScalar(t ValueType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case Uint8:
		return b[0]
	case Int8:
		return int8(b[0])
	case Uint16:
		return le.Uint16(b)
	case Int16:
		return int16(le.Uint16(b))
	case Uint32:
		return le.Uint32(b)
	case Int32:
		return int32(le.Uint32(b))
	case Float32:
		return math.Float32frombits(le.Uint32(b))
	case Bool:
		return b[0] != 0
	case Uint64:
		return le.Uint64(b)
	case Int64:
		return int64(le.Uint64(b))
	case Float64:
		return math.Float64frombits(le.Uint64(b))
	}
	panic("gguf: decodeScalar on non-scalar type")
}

func (d *decoder) array(key string, depth int) (Array, error) {
	if depth >= maxArrayDepth {
		return Array{}, fmt.Errorf("metadata %q: arrays nested deeper than %d", key, maxArrayDepth)
	}
	et, err := d.u32(fmt.Sprintf("metadata %q array element type", key))
	if err != nil {
		return Array{}, err
	}
	elem := ValueType(et)
	if !elem.valid() {
		return Array{}, fmt.Errorf("metadata %q: unknown array element type %d", key, et)
	}
	n, err := d.u64(fmt.Sprintf("metadata %q array length", key))
	if err != nil {
		return Array{}, err
	}
	if n > d.remaining()/uint64(elem.minSize()) {
		return Array{}, fmt.Errorf("metadata %q: array of %d %s cannot fit in the %d bytes left", key, n, elem, d.remaining())
	}
	a := Array{Elem: elem}
	switch elem {
	case String:
		s := make([]string, n)
		for i := range s {
			if s[i], err = d.str(fmt.Sprintf("metadata %q[%d]", key, i)); err != nil {
				return a, err
			}
		}
		a.Values = s
	case ArrayT:
		s := make([]Array, n)
		for i := range s {
			if s[i], err = d.array(key, depth+1); err != nil {
				return a, err
			}
		}
		a.Values = s
	default:
		size := uint64(scalarSize[elem])
		raw := d.b[d.off : d.off+n*size]
		d.off += n * size
		a.Values = decodeScalars(elem, raw, int(n))
	}
	return a, nil
}

func decodeScalars(t ValueType, b []byte, n int) any {
	le := binary.LittleEndian
	switch t {
	case Uint8:
		return append([]uint8(nil), b...)
	case Int8:
		s := make([]int8, n)
		for i := range s {
			s[i] = int8(b[i])
		}
		return s
	case Uint16:
		s := make([]uint16, n)
		for i := range s {
			s[i] = le.Uint16(b[2*i:])
		}
		return s
	case Int16:
		s := make([]int16, n)
		for i := range s {
			s[i] = int16(le.Uint16(b[2*i:]))
		}
		return s
	case Uint32:
		s := make([]uint32, n)
		for i := range s {
			s[i] = le.Uint32(b[4*i:])
		}
		return s
	case Int32:
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(le.Uint32(b[4*i:]))
		}
		return s
	case Float32:
		s := make([]float32, n)
		for i := range s {
			s[i] = math.Float32frombits(le.Uint32(b[4*i:]))
		}
		return s
	case Bool:
		s := make([]bool, n)
		for i := range s {
			s[i] = b[i] != 0
		}
		return s
	case Uint64:
		s := make([]uint64, n)
		for i := range s {
			s[i] = le.Uint64(b[8*i:])
		}
		return s
	case Int64:
		s := make([]int64, n)
		for i := range s {
			s[i] = int64(le.Uint64(b[8*i:]))
		}
		return s
	case Float64:
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Float64frombits(le.Uint64(b[8*i:]))
		}
		return s
	}
	panic("gguf: decodeScalars on non-scalar type")
}
