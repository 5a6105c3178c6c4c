//go:build amd64 && !purego

package kernels

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestTailVNNI: the VNNI tails write exactly the bytes of their portable
// forms (sumTail, q8Tail) for every offset the kernels use, on rows of 0
// to 70 blocks and one of 200, with the int8 extremes, F16 scales of every
// class (subnormal, infinite, NaN: NaN only as NaN, F16C quiets a
// signalling one), and nothing written past the tail.
func TestTailVNNI(t *testing.T) {
	if !(cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI) {
		t.Skip("no AVX-512 VNNI with VL on this CPU")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	type form struct {
		name       string
		ref, fast  func(row []byte, n int)
		size       func(n int) int
		blockBytes int
	}
	var forms []form
	for _, off := range []int32{8, 12, 16, 128} {
		ref, size := sumTail(off)
		fast, _ := sumTailFast(off)
		forms = append(forms, form{"sumTail", ref, fast, size, sumTailBlock})
		ref, size = q8Tail(off)
		fast, _ = q8TailFast(off)
		forms = append(forms, form{"q8Tail", ref, fast, size, q8TailBlock})
	}
	const guard = 64
	for nb := range 71 {
		if nb == 70 {
			nb = 200
		}
		n := nb * lQ8_0.Elems
		for _, f := range forms {
			row := make([]byte, nb*lQ8_0.Size+f.size(n)+guard)
			for i := range row {
				row[i] = byte(rng.Uint32())
			}
			for b := range nb {
				blk := row[b*lQ8_0.Size:]
				switch b % 7 {
				case 0:
					binary.LittleEndian.PutUint16(blk, uint16(rng.IntN(0x400))) // subnormal or zero
				case 1:
					binary.LittleEndian.PutUint16(blk, 0x7c00|uint16(rng.IntN(2))<<15) // ±Inf
				case 2:
					for i := range 32 {
						blk[2+i] = 0x80 // −128
					}
				case 3:
					for i := range 32 {
						blk[2+i] = 0x7f
					}
				}
			}
			want := bytes.Clone(row)
			f.ref(want[:len(row)-guard], n)
			got := bytes.Clone(row)
			f.fast(got[:len(row)-guard], n)
			if !bytes.Equal(got[len(row)-guard:], row[len(row)-guard:]) {
				t.Fatalf("%s nb=%d: wrote past the tail", f.name, nb)
			}
			tail := nb * lQ8_0.Size
			for b := range nb {
				w := want[tail+b*f.blockBytes : tail+(b+1)*f.blockBytes]
				g := got[tail+b*f.blockBytes : tail+(b+1)*f.blockBytes]
				wd := math.Float32frombits(binary.LittleEndian.Uint32(w))
				gd := math.Float32frombits(binary.LittleEndian.Uint32(g))
				if math.IsNaN(float64(wd)) && math.IsNaN(float64(gd)) {
					copy(g[:4], w[:4])
				}
				if !bytes.Equal(g, w) {
					t.Fatalf("%s nb=%d block %d: % x, want % x", f.name, nb, b, g, w)
				}
			}
			if !bytes.Equal(got[:tail], row[:tail]) {
				t.Fatalf("%s nb=%d: changed the row's blocks", f.name, nb)
			}
		}
	}
}
