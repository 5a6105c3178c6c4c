package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/loom-inference/loom/internal/tensor"
)

// Weight quantizers: ggml's reference quantization (quantize_row_*_ref,
// and quantize_iq4_nl), which is what llama-quantize runs for every type
// here when no importance matrix is given, so a file quantized by Loom is
// byte-identical to llama-quantize's. Each follows ggml operation for
// operation in float32; explicit float32 conversions keep Go from fusing
// a multiply and an add.

var weightQuantizers = map[tensor.DType]func(y []byte, x []float32){
	tensor.F32:    quantizeF32,
	tensor.F16:    quantizeF16,
	tensor.BF16:   quantizeBF16,
	tensor.Q4_0:   quantizeQ4_0,
	tensor.Q4_1:   quantizeQ4_1,
	tensor.Q5_0:   quantizeQ5_0,
	tensor.Q5_1:   quantizeQ5_1,
	tensor.Q8_0:   quantizeQ8_0Ref,
	tensor.IQ4_NL: quantizeIQ4NL,
	tensor.MXFP4:  quantizeMXFP4,
	tensor.Q2_K:   quantizeQ2K,
	tensor.Q3_K:   quantizeQ3K,
	tensor.Q4_K:   quantizeQ4K,
	tensor.Q5_K:   quantizeQ5K,
	tensor.Q6_K:   quantizeQ6K,
}

// CanQuantize reports whether weights can be quantized to t.
func CanQuantize(t tensor.DType) bool { _, ok := weightQuantizers[t]; return ok }

// Quantize converts x (whole blocks of t) to t as llama-quantize does
// without an importance matrix; dst holds exactly the result.
func Quantize(t tensor.DType, dst []byte, x []float32) error {
	q, ok := weightQuantizers[t]
	if !ok {
		return fmt.Errorf("quantizing to %s is not supported", t)
	}
	need, err := tensor.RowBytes(t, uint64(len(x)))
	if err != nil {
		return err
	}
	if uint64(len(dst)) != need {
		return fmt.Errorf("quantize %s: %d bytes for %d values, need %d", t, len(dst), len(x), need)
	}
	q(dst, x)
	return nil
}

// roundf is C's roundf (half away from zero) for float32 values: adding
// ±0.5 in float64 is exact for them, so truncation then rounds right
// (in float32 the sum itself could round up: 0.49999997 + 0.5 = 1).
func roundf(f float32) int32 {
	return int32(float64(f) + math.Copysign(0.5, float64(f)))
}

// groupMaxEps is ggml's GROUP_MAX_EPS: a group below it is all zero.
const groupMaxEps = 1e-15

func absf(x float32) float32     { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }
func sqrtf(x float32) float32    { return float32(math.Sqrt(float64(x))) }
func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16(f)) }
func mustBlocks(t tensor.DType) (int, int) {
	tr := t.Traits()
	return tr.BlockSize, tr.TypeSize
}

// absMax returns the element of largest magnitude (the first on ties) and
// that magnitude.
func absMax(x []float32) (mx, amax float32) {
	// The largest magnitude by integer max over the bit patterns (ordered
	// like the values when there is no NaN), then its first element: what
	// ggml's strict-greater scan finds, without a branch per element.
	var m uint32
	for _, v := range x {
		m = max(m, math.Float32bits(v)&^(1<<31))
	}
	switch {
	case m == 0: // all zero: ggml's max stays +0
		return 0, 0
	case m > 0x7f800000: // a NaN: ggml's comparisons skip it
		for _, v := range x {
			if a := absf(v); amax < a {
				amax, mx = a, v
			}
		}
		return mx, amax
	}
	for _, v := range x {
		if math.Float32bits(v)&^(1<<31) == m {
			return v, math.Float32frombits(m)
		}
	}
	return 0, 0
}

func quantizeQ4_0(y []byte, x []float32) {
	qk, bs := mustBlocks(tensor.Q4_0)
	for i := range len(x) / qk {
		v, b := x[i*qk:(i+1)*qk], y[i*bs:(i+1)*bs]
		mx, _ := absMax(v)
		d, id := scaleOf(mx, -8)
		putF16(b[lQ4_0.D:], d)
		lo, hi, qs := (*[16]float32)(v[:16]), (*[16]float32)(v[16:32]), (*[16]byte)(b[lQ4_0.QS:])
		for j := range qs {
			x0, x1 := float32(lo[j]*id), float32(hi[j]*id)
			qs[j] = min(15, byte(int8(x0+8.5))) | min(15, byte(int8(x1+8.5)))<<4
		}
	}
}

func quantizeQ4_1(y []byte, x []float32) {
	qk, bs := mustBlocks(tensor.Q4_1)
	for i := range len(x) / qk {
		v, b := x[i*qk:(i+1)*qk], y[i*bs:(i+1)*bs]
		lo, hi := minMax(v)
		d, id := scaleOf(hi-lo, 15)
		putF16(b[lQ4_1.D:], d)
		putF16(b[lQ4_1.M:], lo)
		for j := range qk / 2 {
			x0, x1 := float32((v[j]-lo)*id), float32((v[qk/2+j]-lo)*id)
			b[lQ4_1.QS+j] = min(15, byte(int8(x0+0.5))) | min(15, byte(int8(x1+0.5)))<<4
		}
	}
}

// scaleOf is ggml's block scale d = m/div and its inverse (0 for d = 0).
func scaleOf(m, div float32) (d, id float32) {
	d = m / div
	if d != 0 {
		id = 1 / d
	}
	return d, id
}

// minMax is ggml's scan from ±FLT_MAX (if x < min: min = x; if x > max:
// max = x). Without NaNs it is computed branch-free on order-preserving
// integer keys of the float bits; the one case the keys order differently
// from the comparisons, −0 against +0, is settled as the scan does: a
// zero result is the first zero in the block. Random weights mispredict
// the scan's branches, which made it a tenth of a Q5_1 mix's time.
func minMax(v []float32) (lo, hi float32) {
	kmin, kmax := int32(math.MaxInt32), int32(math.MinInt32)
	nan := false
	for _, f := range v {
		b := math.Float32bits(f)
		nan = nan || b&0x7fffffff > 0x7f800000
		k := int32(b ^ uint32(int32(b)>>31)>>1) // sign-magnitude → two's complement order
		kmin, kmax = min(kmin, k), max(kmax, k)
	}
	if nan || len(v) == 0 {
		return minMaxScan(v)
	}
	unkey := func(k int32) float32 { return math.Float32frombits(uint32(k) ^ uint32(k>>31)>>1) }
	// The scan never takes +Inf as a min or −Inf as a max: its starting
	// ±FLT_MAX stays.
	lo, hi = min(unkey(kmin), math.MaxFloat32), max(unkey(kmax), -math.MaxFloat32)
	if lo == 0 || hi == 0 {
		for _, f := range v {
			if f == 0 {
				if lo == 0 {
					lo = f
				}
				if hi == 0 {
					hi = f
				}
				break
			}
		}
	}
	return lo, hi
}

// minMaxScan is the scan itself (blocks with a NaN, which it skips).
func minMaxScan(v []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, f := range v {
		if f < lo {
			lo = f
		}
		if f > hi {
			hi = f
		}
	}
	return lo, hi
}

func quantizeQ5_0(y []byte, x []float32) {
	qk, bs := mustBlocks(tensor.Q5_0)
	for i := range len(x) / qk {
		v, b := x[i*qk:(i+1)*qk], y[i*bs:(i+1)*bs]
		mx, _ := absMax(v)
		d, id := scaleOf(mx, -16)
		putF16(b[lQ5_0.D:], d)
		var q [32]byte
		for j := range qk / 2 {
			x0, x1 := float32(v[j]*id), float32(v[qk/2+j]*id)
			q[j], q[qk/2+j] = min(31, byte(int8(x0+16.5))), min(31, byte(int8(x1+16.5)))
		}
		pack5(b[lQ5_0.QH:], b[lQ5_0.QS:], &q)
	}
}

// pack5 stores 32 five-bit values as Q5_0 and Q5_1 do: the low nibbles of
// q[j] and q[j+16] share byte j of qs, the fifth bits form qh.
func pack5(qh, qs []byte, q *[32]byte) {
	var h uint32
	for j := range 16 {
		qs[j] = q[j]&0xf | (q[16+j]&0xf)<<4
		h |= uint32(q[j]&0x10)>>4<<j | uint32(q[16+j]&0x10)>>4<<(j+16)
	}
	binary.LittleEndian.PutUint32(qh, h)
}

func quantizeQ5_1(y []byte, x []float32) {
	qk, bs := mustBlocks(tensor.Q5_1)
	for i := range len(x) / qk {
		v, b := x[i*qk:(i+1)*qk], y[i*bs:(i+1)*bs]
		lo, hi := minMax(v)
		d, id := scaleOf(hi-lo, 31)
		putF16(b[lQ5_1.D:], d)
		putF16(b[lQ5_1.M:], lo)
		var q [32]byte
		for j := range qk / 2 {
			x0, x1 := float32((v[j]-lo)*id), float32((v[qk/2+j]-lo)*id)
			q[j], q[qk/2+j] = byte(x0+0.5), byte(x1+0.5)
		}
		pack5(b[lQ5_1.QH:], b[lQ5_1.QS:], &q)
	}
}

// quantizeQ8_0Ref is quantize_row_q8_0_ref: round half away from zero
// (roundf), unlike the activation quantizer's SIMD rounding.
func quantizeQ8_0Ref(y []byte, x []float32) {
	qk, bs := mustBlocks(tensor.Q8_0)
	for i := range len(x) / qk {
		v, b := x[i*qk:(i+1)*qk], y[i*bs:(i+1)*bs]
		_, amax := absMax(v)
		d, id := scaleOf(amax, 127)
		putF16(b[lQ8_0.D:], d)
		vs, qs := (*[32]float32)(v), (*[32]byte)(b[lQ8_0.QS:])
		for j, f := range vs {
			qs[j] = byte(int8(roundf(float32(f * id))))
		}
	}
}

// bestIndex is best_index_int8: the codebook entry nearest x (the lower
// on ties, by ggml's float comparison). The codebook holds integers, so
// the pair around x follows from x's integer part by a table (iq4Below)
// instead of ggml's bisection, and the final comparison is ggml's. For
// negative x truncation rounds up, so when x lies less than 1 below a
// codebook value the table names that value as the lower neighbour; the
// comparison then still picks it, as ggml does (its other neighbour is
// more than 10 away), so the result is the same.
func bestIndex(val *[16]int8, x float32) int {
	if x <= float32(val[0]) {
		return 0
	}
	if x >= float32(val[15]) {
		return 15
	}
	ml := int(iq4Below[int(x)-int(val[0])])
	r := ml + 1
	if float32(x-iq4Values[ml]) < float32(iq4Values[ml+1]-x) {
		r = ml
	}
	return r
}

// iq4Values is the codebook as float32.
var iq4Values = func() (f [16]float32) {
	for i, v := range kvaluesIQ4NL {
		f[i] = float32(v)
	}
	return f
}()

// iq4Below[i-val[0]] is the last codebook index whose value is ≤ i, for
// integers between the first and last values.
var iq4Below = func() (t [256]uint8) {
	v := &kvaluesIQ4NL
	for i := int(v[0]); i < int(v[15]); i++ {
		k := 0
		for k < 14 && int(v[k+1]) <= i {
			k++
		}
		t[i-int(v[0])] = uint8(k)
	}
	return t
}()

// quantizeIQ4NL is quantize_iq4_nl without weights (ntry 7): a scale
// searched around amax/127 by the weighted fit to the non-linear codebook.
func quantizeIQ4NL(y []byte, x []float32) {
	qk, bs := mustBlocks(tensor.IQ4_NL)
	val := &kvaluesIQ4NL
	var L [32]uint8
	var weight [32]float32
	for i := range len(x) / qk {
		xb, b := x[i*qk:(i+1)*qk], y[i*bs:(i+1)*bs]
		for j, f := range xb {
			weight[j] = float32(f * f)
		}
		mx, amax := absMax(xb)
		var scale float32
		if amax >= groupMaxEps {
			d := -mx / float32(val[0])
			id := 1 / d
			var sumqx, sumq2 float32
			for j, f := range xb {
				l := bestIndex(val, float32(id*f))
				q := float32(val[l])
				sumqx += float32(float32(weight[j]*q) * f)
				sumq2 += float32(float32(weight[j]*q) * q)
			}
			d = sumqx / sumq2
			best := float32(d * sumqx)
			for itry := -7; itry <= 7; itry++ {
				id = float32(itry+int(val[0])) / mx
				sumqx, sumq2 = 0, 0
				for j, f := range xb {
					l := bestIndex(val, float32(id*f))
					q := float32(val[l])
					sumqx += float32(float32(weight[j]*q) * f)
					sumq2 += float32(float32(weight[j]*q) * q)
				}
				if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
					d = sumqx / sumq2
					best = float32(d * sumqx)
				}
			}
			scale = d
		}
		putF16(b[lIQ4_NL.D:], scale)
		var id float32
		if scale != 0 {
			id = 1 / scale
		}
		for j, f := range xb {
			L[j] = uint8(bestIndex(val, float32(id*f)))
		}
		for j := range 16 {
			b[lIQ4_NL.QS+j] = L[j] | L[16+j]<<4
		}
	}
}
