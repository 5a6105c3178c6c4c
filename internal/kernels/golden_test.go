package kernels

import (
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

var update = flag.Bool("update", false, "rewrite testdata/references.golden")

// TestReferencesGolden pins the exact output of every portable reference
// (quant's dequantization, activation quantizer and dot product; the ggml
// order references; the repack order) on seeded random blocks, so a
// rewrite of how the references are built (shared block decoders, the
// type table) can be shown to change no bit. Regenerate with -update only
// when a reference is meant to change.
func TestReferencesGolden(t *testing.T) {
	var out bytes.Buffer
	for _, typ := range quant.Types() {
		o, err := quant.For(typ)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(typ), 7))
		for _, nb := range []int{1, 3, 8} {
			n := nb * typ.BlockSize()
			if typ.BlockSize() == 1 {
				n = nb*64 + 5
			}
			w := randomRow(rng, typ, n)
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			deq := make([]float32, n)
			o.Dequant(deq, w)
			ab, _ := tensor.RowBytes(o.ActType, uint64(n))
			act := make([]byte, ab)
			o.QuantizeAct(act, x)
			fmt.Fprintf(&out, "%-6s n=%-5d dequant=%016x act=%016x dot=%08x", typ, n, hashF32(deq), hashBytes(act), math.Float32bits(o.Dot(n, w, act)))
			if r := table[typ]; r.order != nil {
				fmt.Fprintf(&out, " order=%08x", math.Float32bits(r.order(n, w, act)))
				if r.batch != nil {
					fmt.Fprintf(&out, " batch=%08x", math.Float32bits(r.batch(n, w, act)))
				}
			}
			if r := table[typ].repack; r != nil {
				fmt.Fprintf(&out, " repack=%08x", math.Float32bits(r.ref(n, w, act)))
			}
			if p, ok := packReference(typ); ok {
				// 16 rows of nb blocks, packed block by block, with the
				// activation tail the packed kernels read.
				rows := make([]byte, 0, groupRows*len(w))
				for range groupRows {
					rows = append(rows, randomRow(rng, typ, n)...)
				}
				fmt.Fprintf(&out, " pack=%016x", hashBytes(p(rows, n)))
			}
			out.WriteByte('\n')
		}
	}
	path := filepath.Join("testdata", "references.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, out.Bytes()) {
		gl, wl := bytes.Split(out.Bytes(), []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := range min(len(gl), len(wl)) {
			if !bytes.Equal(gl[i], wl[i]) {
				t.Fatalf("line %d:\n got  %s\n want %s", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(gl), len(wl))
	}
}

func hashF32(v []float32) uint64 {
	h := fnv.New64a()
	var b [4]byte
	for _, f := range v {
		u := math.Float32bits(f)
		b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		h.Write(b[:])
	}
	return h.Sum64()
}

func hashBytes(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// packReference packs 16 rows of n elements of t (row-major) block by
// block with t's packing function (portable code, in every build).
func packReference(t tensor.DType) (func(rows []byte, n int) []byte, bool) {
	type pf struct {
		pack       func(dst, src []byte)
		groupBlock int
	}
	f, ok := map[tensor.DType]pf{
		tensor.Q4_0: {packQ4_0, q4_0GroupBlock}, tensor.Q5_0: {packQ5_0, q5_0GroupBlock}, tensor.Q8_0: {packQ8_0, q8_0GroupBlock},
		tensor.Q4_K: {packQ4_K, q4KGroupBlock}, tensor.Q6_K: {packQ6_K, q6KGroupBlock},
		tensor.MXFP4: {packMXFP4, mxfp4GroupBlock},
	}[t]
	if !ok {
		return nil, false
	}
	return func(rows []byte, n int) []byte {
		nb := n / t.BlockSize()
		tsz := t.Traits().TypeSize
		rb := nb * tsz
		out := make([]byte, nb*f.groupBlock)
		src := make([]byte, groupRows*tsz)
		for b := range nb {
			for r := range groupRows {
				copy(src[r*tsz:(r+1)*tsz], rows[r*rb+b*tsz:])
			}
			f.pack(out[b*f.groupBlock:], src)
		}
		return out
	}, true
}

// TestTypeTable: every type quant computes with has a row, every row an
// order reference or the reason it has none, and every registered kernel
// belongs to a row (registration cannot add a type the table lacks).
func TestTypeTable(t *testing.T) {
	for _, typ := range quant.Types() {
		r, ok := table[typ]
		if !ok {
			t.Errorf("%s: supported by quant but has no row in the kernel table", typ)
			continue
		}
		if r.order == nil && r.noOrder == "" {
			t.Errorf("%s: no ggml order reference, and the row does not say why", typ)
		}
		if r.batch != nil && r.order == nil {
			t.Errorf("%s: a batch order without a one-token order", typ)
		}
		if r.repack != nil && r.repack.ref == nil {
			t.Errorf("%s: repacked by llama.cpp but no reference of that order", typ)
		}
	}
	if len(table) != len(quant.Types()) {
		t.Errorf("%d rows, quant supports %d types", len(table), len(quant.Types()))
	}
}
