package quant

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/tensor"
)

// TestE8M0Half: every exponent byte is 2^(e−128) exactly, the subnormal
// e = 0, 1 and the finite e = 255 included.
func TestE8M0Half(t *testing.T) {
	for e := range 256 {
		if got, want := E8M0Half(byte(e)), float32(math.Ldexp(1, e-128)); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("e=%d: %g (%08x), want %g", e, got, math.Float32bits(got), want)
		}
	}
}

// TestLog2fFloor: the rounding thresholds of floorLog2f are glibc's: for
// every k, the smallest float in [2^k, 2^(k+1)) whose floorf(log2f(·)) is
// k+1 (testdata/log2f_floor.txt, recorded from glibc over every positive
// float32), and floorLog2f follows them on both sides of each threshold.
func TestLog2fFloor(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "log2f_floor.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	glibc := map[int]uint32{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		k, err1 := strconv.Atoi(fields[0])
		b, err2 := strconv.ParseUint(fields[1], 16, 32)
		if len(fields) != 2 || err1 != nil || err2 != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		glibc[k] = uint32(b)
	}
	if len(glibc) < 200 {
		t.Fatalf("%d thresholds read", len(glibc))
	}
	for k := -149; k <= 127; k++ {
		lo := math.Float32bits(float32(math.Ldexp(1, k)))
		hi := uint32(0x7f800000) // 2^128 stands for FLT_MAX's next
		if k < 127 {
			hi = math.Float32bits(float32(math.Ldexp(1, k+1)))
		}
		want, ok := glibc[k]
		if !ok {
			want = hi
		}
		if got := log2fUp[k+149]; got != want {
			t.Errorf("k=%d: threshold %08x, glibc %08x", k, got, want)
		}
		for _, b := range []uint32{lo, lo + 1, want - 2, want - 1, want, want + 1, hi - 1} {
			if b < lo || b >= hi {
				continue
			}
			w := k
			if b >= want {
				w++
			}
			if got := floorLog2f(math.Float32frombits(b)); got != w {
				t.Errorf("floorLog2f(%08x) = %d, want %d", b, got, w)
			}
		}
	}
}

// TestMXFP4Exponent: ggml's exponent byte, the wrap of tiny blocks and
// the +Inf case included.
func TestMXFP4Exponent(t *testing.T) {
	for _, c := range []struct {
		amax float32
		want byte
	}{
		{0, 0}, {1, 125}, {1.5, 125}, {0.99999994, 124}, {math.Nextafter32(2, 0), 125}, {math.Nextafter32(8, 0), 128}, {8, 128}, {12, 128},
		{math.MaxFloat32, 253}, {float32(math.Inf(1)), 0}, {float32(math.Ldexp(1, -125)), 0}, {float32(math.Ldexp(1, -124)), 1},
		{float32(math.Ldexp(1, -126)), 255}, {float32(math.Ldexp(1, -127)), 254}, {math.SmallestNonzeroFloat32, 232},
	} {
		if got := mxfp4Exponent(c.amax); got != c.want {
			t.Errorf("mxfp4Exponent(%g) = %d, want %d", c.amax, got, c.want)
		}
	}
}

// quantizeMXFP4Scan is quantize_row_mxfp4_ref with ggml's own scans
// everywhere (its amax loop, best_index_mxfp4 for every value): the
// reference of the nearest-code shortcut.
func quantizeMXFP4Scan(y []byte, x []float32) {
	for i := range len(x) / 32 {
		v, b := x[32*i:32*i+32], lMXFP4.Block(y, i)
		var amax float32
		for _, f := range v {
			if a := absf(f); amax < a {
				amax = a
			}
		}
		e := mxfp4Exponent(amax)
		d := E8M0Half(e)
		b[lMXFP4.D] = e
		for j := range 16 {
			b[lMXFP4.QS+j] = bestIndexMXFP4(v[j], d) | bestIndexMXFP4(v[16+j], d)<<4
		}
	}
}

// TestNearestMXFP4: the nearest-code shortcut picks ggml's scan's code for
// every x around every code and midpoint (within 40 floats, both signs),
// over scales from the subnormal 2^−128 to 2^124, and at random.
func TestNearestMXFP4(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var mid [7]uint32
	for e := 0; e <= 252; e++ {
		d := E8M0Half(byte(e))
		for k, m := range mxfp4Mids {
			mid[k] = math.Float32bits(m * d)
		}
		check := func(x float32) {
			if a, b := nearestMXFP4(x, &mid), bestIndexMXFP4(x, d); a != b {
				t.Fatalf("e=%d x=%g (%08x): %d, ggml's scan %d", e, x, math.Float32bits(x), a, b)
			}
		}
		for _, m := range []float32{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 10, 12, 14, 15.99} {
			c := m * d
			for s := -40; s <= 40; s++ {
				x := math.Float32frombits(uint32(int32(math.Float32bits(c)) + int32(s)))
				if c == 0 && s < 0 {
					x = math.Float32frombits(uint32(-s) | 1<<31)
				}
				check(x)
				check(-x)
			}
		}
		for range 2000 {
			check(float32(r.Float64()*16) * d * float32(1-2*r.IntN(2)))
		}
		check(float32(math.NaN()))
	}
}

// mxfp4Blocks makes n blocks of the inputs quantize_row_mxfp4_ref meets and
// the ones it is fragile on, one kind per block in turn: Gaussian weights
// at every scale, arbitrary bit patterns (NaN, Inf, subnormals), codes,
// midpoints and their float neighbours, amax just around the log2f
// thresholds, zeros of both signs, blocks with an Inf, a NaN or FLT_MAX.
func mxfp4Blocks(n int) []float32 {
	r := rand.New(rand.NewPCG(39, 17))
	x := make([]float32, 32*n)
	mids := []float32{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 10, 12, 16}
	for b := range n {
		v := x[32*b : 32*b+32]
		sig := math.Ldexp(1, r.IntN(300)-150)
		sc := float32(math.Ldexp(1, r.IntN(300)-150))
		k := r.IntN(277) - 149
		top := math.Float32bits(float32(math.Ldexp(1, k+1)))
		if k == 127 {
			top = 0x7f800000
		}
		for j := range v {
			var f float32
			switch b % 12 {
			case 0:
				f = float32(r.NormFloat64() * 0.02)
			case 1:
				f = float32(r.NormFloat64() * sig)
			case 2:
				f = math.Float32frombits(r.Uint32())
			case 3:
				f = mids[r.IntN(len(mids))] * sc
				f = math.Float32frombits(math.Float32bits(f) + uint32(r.IntN(5)) - 2)
			case 4:
				f = math.Float32frombits(r.Uint32() & 0x80ffffff) // subnormals and tiny normals
			case 5:
				a := math.Float32frombits(top - uint32(r.IntN(64)) - 1)
				if j > 0 {
					a *= r.Float32()
				}
				f = a
			case 6:
				f = float32(math.Copysign(0, float64(r.IntN(2)*2-1)))
			case 7:
				f = float32(r.NormFloat64() * 3e37)
				if j == 7 {
					f = math.MaxFloat32
				}
			case 8:
				f = float32(r.NormFloat64())
				if j == 3 {
					f = float32(math.Inf(1 - 2*r.IntN(2)))
				}
			case 9:
				f = float32(r.NormFloat64() * 0.1)
				if j == 5 {
					f = float32(math.NaN())
				}
			case 10:
				f = float32(r.NormFloat64()*sig) * float32(r.IntN(2))
			default:
				f = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(80)-40)))
			}
			v[j] = f
		}
	}
	return x
}

var writeMXFP4Inputs = flag.String("mxfp4.inputs", "", "write TestQuantizeMXFP4GGML's input floats to this file (to record ggml's output)")

// TestQuantizeMXFP4GGML: Quantize(MXFP4) equals ggml's own
// quantize_row_mxfp4_ref (node-llama-cpp 3.22.1's libggml-base.so, called
// on this machine) on 100,000 blocks of mxfp4Blocks: the digest of ggml's
// output, and the plain scan (quantizeMXFP4Scan) on the same blocks.
func TestQuantizeMXFP4GGML(t *testing.T) {
	const n = 100_000
	x := mxfp4Blocks(n)
	if *writeMXFP4Inputs != "" {
		b := make([]byte, 4*len(x))
		for i, f := range x {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		if err := os.WriteFile(*writeMXFP4Inputs, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rb, _ := tensor.RowBytes(tensor.MXFP4, uint64(len(x)))
	got, scan := make([]byte, rb), make([]byte, rb)
	if err := Quantize(tensor.MXFP4, got, x); err != nil {
		t.Fatal(err)
	}
	quantizeMXFP4Scan(scan, x)
	for i := range n {
		if g, s := lMXFP4.Block(got, i), lMXFP4.Block(scan, i); string(g) != string(s) {
			t.Fatalf("block %d (%v): %x, ggml's scan %x", i, x[32*i:32*i+32], g, s)
		}
	}
	sum := sha256.Sum256(got)
	const ggml = "b136421122cdcdb6ae7be7ed1fa09db2fa0f4d7e1999177eb02bc3c1168974ca"
	if h := hex.EncodeToString(sum[:]); h != ggml {
		t.Errorf("digest %s, ggml's %s", h, ggml)
	}
}

// TestMXFP4RoundTrip: dequantizing and quantizing again gives back every
// block whose largest code is 8 or 12 (the ones the quantizer makes: its
// exponent puts amax/d in [8, 16)), and Dequantize is code·2^(e−128).
func TestMXFP4RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	const n = 4096
	q := make([]byte, n*lMXFP4.Size)
	for i := range n {
		b := lMXFP4.Block(q, i)
		b[lMXFP4.D] = byte(2 + r.IntN(251)) // normal scales whose 12·d is finite
		for j := range 16 {
			v := byte(r.Uint32())
			if v&0xf == 8 { // −0: ggml writes +0
				v &^= 0xf
			}
			if v>>4 == 8 {
				v &= 0xf
			}
			b[lMXFP4.QS+j] = v
		}
		k := lMXFP4.QS + r.IntN(16)
		b[k] = b[k]&0xf0 | byte(6+r.IntN(2)+8*r.IntN(2)) // a ±8 or ±12
	}
	y := make([]float32, 32*n)
	if err := Dequantize(tensor.MXFP4, y, q); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		b := lMXFP4.Block(q, i)
		for j := range 32 {
			c := b[lMXFP4.QS+j%16] >> (4 * (j / 16)) & 0xf
			want := float32(math.Ldexp(float64(MXFP4Value(c)), int(b[lMXFP4.D])-128))
			if math.Float32bits(y[32*i+j]) != math.Float32bits(want) {
				t.Fatalf("block %d element %d: %g, want %g", i, j, y[32*i+j], want)
			}
		}
	}
	back := make([]byte, len(q))
	if err := Quantize(tensor.MXFP4, back, y); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if g, w := lMXFP4.Block(back, i), lMXFP4.Block(q, i); string(g) != string(w) {
			t.Fatalf("block %d: %x, was %x", i, g, w)
		}
	}
}

// FuzzQuantizeMXFP4: on any 32 floats the quantizer equals ggml's plain
// scan, and its output dequantizes to code·2^(e−128).
func FuzzQuantizeMXFP4(f *testing.F) {
	seed := mxfp4Blocks(12)
	for i := range 12 {
		b := make([]byte, 128)
		for j, v := range seed[32*i : 32*i+32] {
			binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(v))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 128 {
			return
		}
		x := make([]float32, 32)
		for j := range x {
			x[j] = math.Float32frombits(binary.LittleEndian.Uint32(in[4*j:]))
		}
		got, want := make([]byte, lMXFP4.Size), make([]byte, lMXFP4.Size)
		if err := Quantize(tensor.MXFP4, got, x); err != nil {
			t.Fatal(err)
		}
		quantizeMXFP4Scan(want, x)
		if string(got) != string(want) {
			t.Fatalf("%v: %x, ggml's scan %x", x, got, want)
		}
		y := make([]float32, 32)
		if err := Dequantize(tensor.MXFP4, y, got); err != nil {
			t.Fatal(err)
		}
		for j := range y {
			c := got[lMXFP4.QS+j%16] >> (4 * (j / 16)) & 0xf
			w := float32(math.Ldexp(float64(MXFP4Value(c)), int(got[lMXFP4.D])-128))
			if math.Float32bits(y[j]) != math.Float32bits(w) {
				t.Fatalf("dequant %d: %g, want %g", j, y[j], w)
			}
		}
	})
}
