package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/safetensors"
)

// file builds a safetensors file from a raw header and data.
func file(header string, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func TestParseGood(t *testing.T) {
	b := file(`{"__metadata__":{"format":"pt"},"b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"e":{"dtype":"BF16","shape":[0,3],"data_offsets":[12,12]}}`, make([]byte, 12))
	f, err := safetensors.Parse("t", b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Meta["format"] != "pt" || len(f.Tensors) != 3 || f.Tensors[0].Name != "a" && f.Tensors[0].Name != "e" {
		t.Fatalf("%+v", f)
	}
	if x, ok := f.Tensor("b"); !ok || x.DType != "F16" || len(x.Data) != 4 {
		t.Fatalf("b: %+v", x)
	}
}

// TestParseHostile: every malformed file is a clear error naming the file
// and, where there is one, the tensor; never a panic or a large allocation.
func TestParseHostile(t *testing.T) {
	huge := make([]byte, 8)
	binary.LittleEndian.PutUint64(huge, 1<<62)
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"truncated length", []byte{1, 2, 3}, "too short"},
		{"length beyond file", huge, "header of"},
		{"header cut", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, nil)[:20], "header of"},
		{"not an object", file(`[1,2]`, nil), "not a JSON object"},
		{"bad json", file(`{"a":`, nil), "tensor \"a\""},
		{"deep nesting", file(`{"a":`+deep+`}`, nil), "nests deeper"},
		{"unknown dtype", file(`{"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1)), `unknown dtype "Q4"`},
		{"shape mismatch", file(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8)), "F32 [3] is 12 bytes"},
		{"out of range", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 8)), "beyond the 8 bytes"},
		{"reversed offsets", file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, make([]byte, 8)), "data_offsets [4, 0]"},
		{"negative dim", file(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, nil), "dimension -1"},
		{"overflowing shape", file(`{"a":{"dtype":"F64","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,8]}}`, make([]byte, 8)), "overflows"},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "overlap"},
		{"duplicate", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), `"a" appears twice`},
		{"two offsets", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}`, make([]byte, 4)), "data_offsets has 1"},
		{"metadata not strings", file(`{"__metadata__":{"a":1}}`, nil), "__metadata__"},
		{"trailing", file(`{} {}`, nil), "after the JSON object"},
	}
	for _, c := range cases {
		_, err := safetensors.Parse("bad.safetensors", c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.safetensors") {
			t.Errorf("%s: error %v, want one containing %q and the file name", c.name, err, c.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(file(`{"__metadata__":{"x":"y"},"b":{"dtype":"BF16","shape":[1,1],"data_offsets":[0,2]}}`, make([]byte, 2)))
	f.Add(file(`{"a":{"dtype":"F16","shape":[],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}}`, make([]byte, 2)))
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := safetensors.Parse("fuzz", b)
		if err != nil {
			return
		}
		var end int64
		for _, x := range sf.Tensors { // what parses is consistent
			if int64(len(x.Data)) != x.Elems()*int64(safetensors.DTypes[x.DType]) {
				t.Fatalf("%s: %d bytes for %s %v", x.Name, len(x.Data), x.DType, x.Shape)
			}
			end += int64(len(x.Data))
		}
		if end > int64(len(b)) {
			t.Fatalf("tensors hold %d bytes of a %d-byte file", end, len(b))
		}
	})
}

// TestShards: a real model's tensors split into shards with an index load
// back identically, and inconsistent indexes are refused.
func TestShards(t *testing.T) {
	one, err := safetensors.OpenDir(filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "hf"))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	names := one.Names()
	if len(names) < 10 {
		t.Fatalf("%d tensors", len(names))
	}
	dir := t.TempDir()
	const n = 3
	wm := map[string]string{}
	for s := range n {
		var part []safetensors.Tensor
		shard := fmt.Sprintf("model-%05d-of-%05d.safetensors", s+1, n)
		for i, name := range names {
			if i%n == s {
				x, _ := one.Tensor(name)
				part = append(part, *x)
				wm[name] = shard
			}
		}
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, part, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, shard), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeIndex := func(wm map[string]string) {
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": wm})
		if err := os.WriteFile(filepath.Join(dir, safetensors.IndexName), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeIndex(wm)
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Files) != n {
		t.Fatalf("%d shards opened", len(set.Files))
	}
	for _, name := range names {
		a, _ := one.Tensor(name)
		b, ok := set.Tensor(name)
		if !ok || a.DType != b.DType || fmt.Sprint(a.Shape) != fmt.Sprint(b.Shape) || !bytes.Equal(a.Data, b.Data) {
			t.Fatalf("%s differs after sharding", name)
		}
	}
	set.Close()

	// The index must agree with the shards.
	bad := map[string]string{}
	for k, v := range wm {
		bad[k] = v
	}
	bad[names[0]] = "model-00002-of-00003.safetensors"
	if names[0] != names[1] && wm[names[0]] == bad[names[0]] {
		bad[names[0]] = "model-00003-of-00003.safetensors"
	}
	for _, c := range []struct {
		wm   map[string]string
		want string
	}{
		{bad, "the index says"},
		{map[string]string{"x": "../escape.safetensors"}, "a file name in the same folder"},
		{map[string]string{"nowhere": "model-00001-of-00003.safetensors"}, "in no shard"},
		{map[string]string{"a": "missing.safetensors"}, "missing.safetensors"},
	} {
		writeIndex(c.wm)
		if _, err := safetensors.OpenDir(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("index %v: error %v, want %q", c.wm, err, c.want)
		}
	}
}

// TestHoldsOnlyMapped: a file read whole (not a mapping) holds nothing.
func TestHoldsOnlyMapped(t *testing.T) {
	f := &safetensors.File{}
	if f.Holds(make([]byte, 4)) {
		t.Error("a file without a mapping holds bytes")
	}
}
