package kvcache

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// TestKeyLayouts: for every key type and layout (F16 transposed, Q8_0 in
// columns, the others as rows), a key stored at a slot of a block table not
// in pool order reads back as ggml's conversion of it (Key), a narrower
// layer's key too; SetKey replaces it; a context shift moves keys to
// their new slots unchanged; and a Q8_0 column block holds, slot by slot,
// the row ggml's quantizer writes.
func TestKeyLayouts(t *testing.T) {
	const kvd, nLayers = 96, 2
	for _, kt := range []tensor.DType{tensor.F16, tensor.BF16, tensor.F32, tensor.Q8_0, tensor.Q4_0} {
		t.Run(kt.String(), func(t *testing.T) {
			p, err := NewTypedPool(nLayers, kvd, 12, Window{}, Types{K: kt, V: tensor.F16})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, uint64(kt)))
			other, s := p.NewSeq(), p.NewSeq()
			const n = 3*BlockSize + 7
			for range 4 { // interleave the tables
				if err := other.Reserve(other.Len() + 5); err != nil {
					t.Fatal(err)
				}
				other.Commit(make([]int32, 5))
			}
			if err := s.Reserve(n); err != nil {
				t.Fatal(err)
			}
			s.Commit(make([]int32, n))
			// as converts x the way the cache stores it.
			as := func(x []float32) []float32 {
				b := make([]byte, 2*words(kt, len(x)))
				if err := kernels.QuantizeRow(kt, b, x); err != nil {
					t.Fatal(err)
				}
				out := make([]float32, len(x))
				if err := quant.Dequantize(kt, out, b); err != nil {
					t.Fatal(err)
				}
				return out
			}
			keys := make([][][]float32, nLayers) // [layer][pos]
			for l := range nLayers {
				width := kvd - 32*l // layer 1 narrower than the row
				for pos := range n {
					k := make([]float32, width)
					for i := range k {
						k[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(6)-3))
					}
					p.Store(l, s.Slot(pos), k, make([]float32, width))
					keys[l] = append(keys[l], as(k))
				}
			}
			check := func(what string, pos, from int) {
				t.Helper()
				for l := range nLayers {
					got := make([]float32, len(keys[l][from]))
					p.Key(l, s.Slot(pos), got)
					for i, w := range keys[l][from] {
						if math.Float32bits(got[i]) != math.Float32bits(w) {
							t.Fatalf("%s: layer %d position %d element %d: %g, stored %g", what, l, pos, i, got[i], w)
						}
					}
				}
			}
			for pos := range n {
				check("stored", pos, pos)
			}
			if Columns(kt) {
				// Slot by slot, the column block is ggml's row.
				for pos := range n {
					at := s.Slot(pos)
					blk, i := colBlock(p.K[0], at.K, p.KWords)
					row := make([]byte, 2*p.KWords)
					kernels.GetQ8Col(row, blk, i)
					want := make([]byte, len(row))
					k := make([]float32, kvd)
					p.Key(0, at, k)
					if err := kernels.QuantizeRow(kt, want, k); err != nil {
						t.Fatal(err)
					}
					if string(row) != string(want) {
						t.Fatalf("position %d: column block holds %x, ggml's row %x", pos, row, want)
					}
				}
			}
			// SetKey: position 40's key replaced.
			for l := range nLayers {
				k := make([]float32, kvd-32*l)
				for i := range k {
					k[i] = float32(i%7) - 3
				}
				p.SetKey(l, s.Slot(40), k)
				keys[l][40] = as(k)
			}
			check("set", 40, 40)
			// A shift moves [keep+d, n) to keep on.
			const keep, d = 5, 2*BlockSize + 3
			if err := s.Shift(keep, d); err != nil {
				t.Fatal(err)
			}
			for pos := range s.Len() {
				from := pos
				if pos >= keep {
					from = pos + d
				}
				check(fmt.Sprintf("shifted (from %d)", from), pos, from)
			}
		})
	}
}
