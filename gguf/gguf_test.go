package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// validFile builds a small file exercising every value type, nested arrays
// and two tensors.
func validFile(t testing.TB) []byte {
	w := NewWriter()
	w.Set("general.architecture", "llama")
	w.Set("u8", uint8(1))
	w.Set("i8", int8(-1))
	w.Set("u16", uint16(2))
	w.Set("i16", int16(-2))
	w.Set("u32", uint32(3))
	w.Set("i32", int32(-3))
	w.Set("f32", float32(1.5))
	w.Set("bool", true)
	w.Set("u64", uint64(4))
	w.Set("i64", int64(-4))
	w.Set("f64", 2.5)
	w.Set("strs", []string{"a", "bc", ""})
	w.Set("nested", Array{ArrayT, []Array{{Int32, []int32{1, 2}}, {String, []string{"x"}}}})
	if err := w.AddTensor("a", F32, []uint64{4, 2}, make([]byte, 32)); err != nil {
		t.Fatal(err)
	}
	q := make([]byte, 34*2)
	if err := w.AddTensor("b", Q8_0, []uint64{64}, q); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	f, err := Parse(validFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || len(f.Tensors) != 2 || len(f.KVs) != 14 {
		t.Fatalf("version %d, %d tensors, %d kvs", f.Version, len(f.Tensors), len(f.KVs))
	}
	if s, _ := f.String("general.architecture"); s != "llama" {
		t.Errorf("architecture %q", s)
	}
	if v, _ := f.Float("f64"); v != 2.5 {
		t.Errorf("f64 %v", v)
	}
	if v, _ := f.Get("i16"); v.V != int16(-2) {
		t.Errorf("i16 %v", v)
	}
	if s, _ := f.Strings("strs"); len(s) != 3 || s[1] != "bc" {
		t.Errorf("strs %v", s)
	}
	n, _ := f.Get("nested")
	arr := n.V.(Array).Values.([]Array)
	if len(arr) != 2 || arr[0].Values.([]int32)[1] != 2 || arr[1].Values.([]string)[0] != "x" {
		t.Errorf("nested %v", arr)
	}
	b, _ := f.Tensor("b")
	if b.Type != Q8_0 || b.Size != 68 || b.Offset%f.Alignment != 0 || len(f.TensorData(b)) != 68 {
		t.Errorf("tensor b %+v", b)
	}
}

// TestTruncations: every prefix of a valid file is rejected with an error.
func TestTruncations(t *testing.T) {
	full := validFile(t)
	for n := 0; n < len(full); n++ {
		if _, err := Parse(full[:n]); err == nil {
			// Only trailing data-section padding could be optional; the last
			// tensor ends at the end of the file, so every cut must fail.
			t.Fatalf("truncation at %d of %d accepted", n, len(full))
		}
	}
}

// raw builds a GGUF header by hand for malformed cases.
type raw struct{ bytes.Buffer }

func (r *raw) u32(v uint32) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) u64(v uint64) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }
func (r *raw) head(nt, nkv uint64) *raw {
	return r.u32(Magic).u32(3).u64(nt).u64(nkv)
}
func (r *raw) tensor(name string, typ uint32, off uint64, dims ...uint64) *raw {
	r.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	return r.u32(typ).u64(off)
}
func (r *raw) pad(to int) *raw {
	for r.Len()%to != 0 {
		r.WriteByte(0)
	}
	return r
}
func (r *raw) zeros(n int) *raw { r.Write(make([]byte, n)); return r }

func TestMalformed(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "magic"},
		{"bad magic", new(raw).u32(0x12345678).u32(3).u64(0).u64(0).Bytes(), "bad magic"},
		{"version 1", new(raw).u32(Magic).u32(1).u64(0).u64(0).Bytes(), "version 1"},
		{"version 4", new(raw).u32(Magic).u32(4).u64(0).u64(0).Bytes(), "version 4"},
		{"absurd kv count", new(raw).head(0, math.MaxUint64).Bytes(), "metadata count"},
		{"absurd tensor count", new(raw).head(1<<62, 0).Bytes(), "tensor count"},
		{"huge key length", new(raw).head(0, 1).u64(math.MaxUint64).zeros(16).Bytes(), "length"},
		{"huge string value", new(raw).head(0, 1).str("k").u32(uint32(String)).u64(1 << 60).zeros(16).Bytes(), "length"},
		{"huge array", new(raw).head(0, 1).str("k").u32(uint32(ArrayT)).u32(uint32(Uint64)).u64(1 << 61).zeros(16).Bytes(), "cannot fit"},
		{"unknown value type", new(raw).head(0, 1).str("k").u32(13).zeros(16).Bytes(), "unknown value type"},
		{"unknown array type", new(raw).head(0, 1).str("k").u32(uint32(ArrayT)).u32(99).u64(1).zeros(16).Bytes(), "unknown array element type"},
		{"duplicate key", new(raw).head(0, 2).str("k").u32(uint32(Uint8)).zeros(1).str("k").u32(uint32(Uint8)).zeros(1).Bytes(), "duplicate metadata key"},
		{"alignment zero", new(raw).head(0, 1).str("general.alignment").u32(uint32(Uint32)).u32(0).Bytes(), "power of two"},
		{"alignment three", new(raw).head(0, 1).str("general.alignment").u32(uint32(Uint32)).u32(3).Bytes(), "power of two"},
		{"alignment wrong type", new(raw).head(0, 1).str("general.alignment").u32(uint32(Uint64)).u64(32).Bytes(), "want u32"},
		{"dims > 4", new(raw).head(1, 0).tensor("t", 0, 0, 1, 1, 1, 1, 1).pad(32).zeros(32).Bytes(), "dimensions"},
		{"zero dims", new(raw).head(1, 0).str("t").u32(0).u32(0).u64(0).pad(32).zeros(32).Bytes(), "dimensions"},
		{"zero dim", new(raw).head(1, 0).tensor("t", 0, 0, 4, 0).pad(32).zeros(32).Bytes(), "dimension 1 is 0"},
		{"element overflow", new(raw).head(1, 0).tensor("t", 0, 0, 1<<40, 1<<40).pad(32).zeros(32).Bytes(), "overflows"},
		{"byte size overflow", new(raw).head(1, 0).tensor("t", 0, 0, 1<<62).pad(32).zeros(32).Bytes(), "overflows"},
		{"unknown tensor type", new(raw).head(1, 0).tensor("t", 4, 0, 4).pad(32).zeros(32).Bytes(), "unknown ggml type"},
		{"unknown tensor type high", new(raw).head(1, 0).tensor("t", 1000, 0, 4).pad(32).zeros(32).Bytes(), "unknown ggml type"},
		{"row not whole blocks", new(raw).head(1, 0).tensor("t", uint32(Q8_0), 0, 33).pad(32).zeros(64).Bytes(), "multiple"},
		{"data past EOF", new(raw).head(1, 0).tensor("t", 0, 0, 64).pad(32).zeros(100).Bytes(), "past the file"},
		{"offset past EOF", new(raw).head(1, 0).tensor("t", 0, 1<<40, 4).pad(32).zeros(32).Bytes(), "past the file"},
		{"offset overflow", new(raw).head(1, 0).tensor("t", 0, math.MaxUint64-31, 8).pad(32).zeros(32).Bytes(), "past the file"},
		{"misaligned", new(raw).head(1, 0).tensor("t", 0, 4, 4).pad(32).zeros(64).Bytes(), "alignment"},
		{"overlap", new(raw).head(2, 0).tensor("a", 0, 0, 16).tensor("b", 0, 32, 16).pad(32).zeros(128).Bytes(), "overlap"},
		{"duplicate tensor", new(raw).head(2, 0).tensor("a", 0, 0, 8).tensor("a", 0, 32, 8).pad(32).zeros(64).Bytes(), "duplicate tensor"},
		{"deep arrays", deepArrays(), "nested deeper"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.data)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func deepArrays() []byte {
	r := new(raw).head(0, 1).str("k").u32(uint32(ArrayT))
	for range 20 {
		r.u32(uint32(ArrayT)).u64(1)
	}
	return r.u32(uint32(Uint8)).u64(0).Bytes()
}

func FuzzParse(f *testing.F) {
	f.Add(validFile(f))
	f.Add(deepArrays())
	f.Add(new(raw).head(2, 0).tensor("a", 0, 0, 16).tensor("b", 0, 32, 16).pad(32).zeros(128).Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			return
		}
		// A file that parses must be fully usable: every tensor's data in range.
		for i := range file.Tensors {
			_ = file.TensorData(&file.Tensors[i])
		}
		for _, kv := range file.KVs {
			_ = kv.Value.String()
		}
	})
}
