package quant

import (
	"github.com/loom-inference/loom/internal/tensor"
)

// The k-quant reference quantizers (quantize_row_q{2..6}_K_ref) and their
// helpers (make_qx_quants, make_q3_quants, make_qkx2_quants), in ggml's
// float32 operation order.

// roundEven is nearestInt as a float: ggml's magic-number rounding (half
// to even, for |f| < 2^22) without the trip through the integer unit; the
// hot fits below round, clamp and multiply in float32 only.
func roundEven(f float32) float32 { return float32(f+12582912) - 12582912 }

// clampf limits f to [lo, hi] (f not NaN), as ggml's MAX(lo, MIN(hi, l)).
// Branches, not the min/max builtins: those handle NaN and −0 with a
// dozen instructions, which made the Q6_K quantizer half again as slow.
func clampf(f, lo, hi float32) float32 {
	if f < lo {
		return lo
	}
	if f > hi {
		return hi
	}
	return f
}

// makeQXQuants is make_qx_quants with rmse_type 1 and no weights (each
// element weighted by x²): L[i] in [0, 2·nmax).
func makeQXQuants(nmax int, x []float32, L []int8) float32 {
	x = x[:min(len(x), 32)] // groups of 16 (Q6_K); at most 32
	mx, amax := absMax(x)
	if amax < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	// w = x² and w·x are the same in every pass: computed once.
	var w, wx [32]float32
	n := len(x)
	for i, v := range x[:n] {
		w[i] = float32(v * v)
		wx[i] = float32(w[i] * v)
	}
	lo, hi := float32(-nmax), float32(nmax-1)
	fit := func(iscale float32) (sumlx, suml2 float32) {
		for i, v := range x[:n] {
			l := clampf(roundEven(float32(iscale*v)), lo, hi)
			sumlx += float32(wx[i] * l)
			suml2 += float32(float32(w[i]*l) * l)
		}
		return sumlx, suml2
	}
	// L depends on the scale alone, so it is written once, for the best
	// scale, instead of at every improvement as ggml does (same values).
	iscale := float32(-nmax) / mx
	bestIscale := iscale
	sumlx, suml2 := fit(iscale)
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(float32(nmax) + float32(0.1*float32(is))) / mx
		sumlx, suml2 = fit(iscale)
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			bestIscale = iscale
			scale = sumlx / suml2
			best = float32(scale * sumlx)
		}
	}
	for i, v := range x[:n] {
		L[i] = int8(clampf(roundEven(float32(bestIscale*v)), lo, hi)) + int8(nmax)
	}
	return scale
}

// makeQ3Quants is make_q3_quants with do_rmse: a first rounding, then up
// to five passes that move single elements when the weighted fit improves.
func makeQ3Quants(nmax int, x []float32, L []int8) float32 {
	mx, amax := absMax(x)
	if amax < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	iscale := float32(-nmax) / mx
	var sumlx, suml2 float32
	for i, v := range x {
		l := max(-nmax, min(nmax-1, int(nearestInt(float32(iscale*v)))))
		L[i] = int8(l)
		w := float32(v * v)
		sumlx += float32(float32(w*v) * float32(l))
		suml2 += float32(float32(w*float32(l)) * float32(l))
	}
	for range 5 {
		changed := 0
		for i, v := range x {
			w := float32(v * v)
			li := float32(L[i])
			slx := sumlx - float32(float32(w*v)*li)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w*li)*li)
				nl := max(-nmax, min(nmax-1, int(nearestInt(float32(float32(v*sl2)/slx)))))
				if nl != int(L[i]) {
					fl := float32(nl)
					slx += float32(float32(w*v) * fl)
					sl2 += float32(float32(w*fl) * fl)
					if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i], sumlx, suml2 = int8(nl), slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range x {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// makeQKX2Quants is make_qkx2_quants: an asymmetric fit (scale and a
// non-positive min) of x to [0, nmax], searching nstep+1 candidate scales
// by weighted error (absolute when mad). It returns the scale and −min.
func makeQKX2Quants(nmax int, x, weights []float32, L []uint8, rmin, rdelta float32, nstep int, mad bool) (float32, float32) {
	x = x[:min(len(x), 32)] // sub-blocks of 16 or 32
	n := len(x)
	weights, L = weights[:n], L[:n] // one bounds check here, none in the loops
	lo, hi := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		lo, hi = min(lo, x[i]), max(hi, x[i])
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		clear(L[:n])
		return 0, -lo
	}
	// errOf takes the candidate's levels as floats (q[i] = L[i]), kept
	// beside the bytes so the error pass converts nothing.
	errOf := func(scale, mn float32, q *[32]float32) float32 {
		var e float32
		w := weights[:len(x)]
		if mad {
			for i, v := range x {
				e += float32(w[i] * absf(float32(float32(scale*q[i])+mn)-v))
			}
			return e
		}
		for i, v := range x {
			diff := float32(float32(scale*q[i])+mn) - v
			e += float32(w[i] * float32(diff*diff))
		}
		return e
	}
	// x − min, as every candidate computes it (again when min changes).
	var xm [32]float32
	shift := func() {
		for i, v := range x {
			xm[i] = v - lo
		}
	}
	shift()
	iscale := float32(nmax) / (hi - lo)
	scale := 1 / iscale
	fmax := float32(nmax)
	var lf, lfAux [32]float32 // L and Laux as floats
	for i := range x {
		lf[i] = clampf(roundEven(float32(iscale*xm[i])), 0, fmax)
		L[i] = uint8(lf[i])
	}
	best := errOf(scale, lo, &lf)
	for is := 0; is <= nstep; is++ {
		iscale = float32(float32(rmin+float32(rdelta*float32(is)))+float32(nmax)) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			fl := clampf(roundEven(float32(iscale*xm[i])), 0, fmax)
			lfAux[i] = fl
			wl := float32(weights[i] * fl)
			sumL += wl
			sumL2 += float32(wl * fl)
			sumXL += float32(wl * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			if cur := errOf(thisScale, thisMin, &lfAux); cur < best {
				lf = lfAux
				best, scale, lo = cur, thisScale, thisMin
				shift()
			}
		}
	}
	for i := range L {
		L[i] = uint8(lf[i])
	}
	return scale, -lo
}

func quantizeQ2K(y []byte, x []float32) {
	_, bs := mustBlocks(tensor.Q2_K)
	var L [qkK]uint8
	var weights [16]float32
	var mins, scales [qkK / 16]float32
	const q4scale = 15
	for i := range len(x) / qkK {
		v, b := x[i*qkK:(i+1)*qkK], y[i*bs:(i+1)*bs]
		l := &lQ2_K
		sc, qs := b[l.Scales:l.Scales+16], b[l.QS:]
		var maxScale, maxMin float32
		for j := range qkK / 16 {
			for l := range 16 {
				weights[l] = absf(v[16*j+l])
			}
			scales[j], mins[j] = makeQKX2Quants(3, v[16*j:16*j+16], weights[:], L[16*j:], -0.5, 0.1, 15, true)
			maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
		}
		if maxScale > 0 {
			iscale := q4scale / maxScale
			for j := range sc {
				sc[j] = uint8(nearestInt(float32(iscale * scales[j])))
			}
			putF16(b[l.D:], maxScale/q4scale)
		} else {
			clear(sc)
			putF16(b[l.D:], 0)
		}
		if maxMin > 0 {
			iscale := q4scale / maxMin
			for j := range sc {
				sc[j] |= uint8(nearestInt(float32(iscale*mins[j])) << 4)
			}
			putF16(b[l.M:], maxMin/q4scale)
		} else {
			putF16(b[l.M:], 0)
		}
		d, dmin := f16At(b, l.D), f16At(b, l.M)
		for j := range qkK / 16 {
			dj := float32(d * float32(sc[j]&0xf))
			if dj == 0 {
				continue
			}
			dm := float32(dmin * float32(sc[j]>>4))
			for ii := range 16 {
				L[16*j+ii] = uint8(max(0, min(3, int(nearestInt(float32(v[16*j+ii]+dm)/dj)))))
			}
		}
		pack2(qs, &L)
	}
}

// pack2 stores the low two bits of 256 values as Q2_K and Q3_K do: byte l
// of each 32-byte group holds values l, l+32, l+64 and l+96 of its 128.
func pack2(qs []byte, L *[qkK]uint8) {
	for j := 0; j < qkK; j += 128 {
		for l := range 32 {
			qs[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
		}
	}
}

func quantizeQ3K(y []byte, x []float32) {
	_, bs := mustBlocks(tensor.Q3_K)
	var L [qkK]int8
	var scales [qkK / 16]float32
	for i := range len(x) / qkK {
		v, b := x[i*qkK:(i+1)*qkK], y[i*bs:(i+1)*bs]
		l := &lQ3_K
		hmask, qs, sc := b[l.QH:l.QH+qkK/8], b[l.QS:], b[l.Scales:l.Scales+12]
		var maxScale, amax float32
		for j := range qkK / 16 {
			scales[j] = makeQ3Quants(4, v[16*j:16*j+16], L[16*j:])
			if s := absf(scales[j]); s > amax {
				amax, maxScale = s, scales[j]
			}
		}
		clear(sc)
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := range qkK / 16 {
				l := int8(nearestInt(float32(iscale * scales[j])))
				l = max(-32, min(31, l)) + 32
				if j < 8 {
					sc[j] = uint8(l) & 0xf
				} else {
					sc[j-8] |= (uint8(l) & 0xf) << 4
				}
				l >>= 4
				sc[j%4+8] |= uint8(l) << (2 * (j / 4))
			}
			putF16(b[l.D:], 1/iscale)
		} else {
			putF16(b[l.D:], 0)
		}
		d := f16At(b, l.D)
		var unpacked [16]int32
		q3kScales(sc, &unpacked)
		for j, s := range unpacked {
			dj := float32(d * float32(s))
			if dj == 0 {
				continue
			}
			for ii := range 16 {
				L[16*j+ii] = int8(max(-4, min(3, int(nearestInt(v[16*j+ii]/dj))))) + 4
			}
		}
		clear(hmask)
		m, hm := 0, uint8(1)
		for j := range qkK {
			if L[j] > 3 {
				hmask[m] |= hm
				L[j] -= 4
			}
			if m++; m == qkK/8 {
				m, hm = 0, hm<<1
			}
		}
		var u [qkK]uint8
		for j, l := range L {
			u[j] = uint8(l)
		}
		pack2(qs, &u)
	}
}

// quantizeQ45K is quantize_row_q4_K_ref (nmax 15) and _q5_K_ref (31): per
// 32-element sub-block an asymmetric fit weighted by rms + |x|, then 6-bit
// scales and mins against the super-block's largest.
func quantizeQ45K(y []byte, x []float32, t tensor.DType) {
	_, bs := mustBlocks(t)
	nmax, rmin, rdelta, nstep := 15, float32(-1), float32(0.1), 20
	if t == tensor.Q5_K {
		nmax, rmin, nstep = 31, -0.5, 15
	}
	var L [qkK]uint8
	var weights [32]float32
	var mins, scales [qkK / 32]float32
	for i := range len(x) / qkK {
		v, b := x[i*qkK:(i+1)*qkK], y[i*bs:(i+1)*bs]
		l := LayoutOf(t)
		sc := b[l.Scales : l.Scales+12]
		var maxScale, maxMin float32
		for j := range qkK / 32 {
			xs := v[32*j : 32*j+32]
			var sumX2 float32
			for _, f := range xs {
				sumX2 += float32(f * f)
			}
			avX := sqrtf(sumX2 / 32)
			for l, f := range xs {
				weights[l] = avX + absf(f)
			}
			scales[j], mins[j] = makeQKX2Quants(nmax, xs, weights[:], L[32*j:], rmin, rdelta, nstep, false)
			maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
		}
		var invScale, invMin float32
		if maxScale > 0 {
			invScale = 63 / maxScale
		}
		if maxMin > 0 {
			invMin = 63 / maxMin
		}
		for j := range qkK / 32 {
			ls := min(63, uint8(nearestInt(float32(invScale*scales[j]))))
			lm := min(63, uint8(nearestInt(float32(invMin*mins[j]))))
			if j < 4 {
				sc[j], sc[j+4] = ls, lm
			} else {
				sc[j+4] = ls&0xf | (lm&0xf)<<4
				sc[j-4] |= ls >> 4 << 6
				sc[j] |= lm >> 4 << 6
			}
		}
		putF16(b[l.D:], maxScale/63)
		putF16(b[l.M:], maxMin/63)
		d, dmin := f16At(b, l.D), f16At(b, l.M)
		for j := range qkK / 32 {
			s, m := scaleMinK4(j, sc)
			dj := float32(d * float32(s))
			if dj == 0 {
				continue
			}
			dm := float32(dmin * float32(m))
			for ii := range 32 {
				L[32*j+ii] = uint8(max(0, min(nmax, int(nearestInt(float32(v[32*j+ii]+dm)/dj)))))
			}
		}
		if t == tensor.Q4_K {
			qs := b[l.QS:]
			for j, o := 0, 0; j < qkK; j, o = j+64, o+32 {
				for l := range 32 {
					qs[o+l] = L[j+l] | L[j+l+32]<<4
				}
			}
			continue
		}
		qh, ql := b[l.QH:l.QH+32], b[l.QS:]
		clear(qh)
		m1, m2 := uint8(1), uint8(2)
		for n, o := 0, 0; n < qkK; n, o = n+64, o+32 {
			for j := range 32 {
				l1, l2 := L[n+j], L[n+j+32]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= m1
				}
				if l2 > 15 {
					l2 -= 16
					qh[j] |= m2
				}
				ql[o+j] = l1 | l2<<4
			}
			m1, m2 = m1<<2, m2<<2
		}
	}
}

func quantizeQ4K(y []byte, x []float32) { quantizeQ45K(y, x, tensor.Q4_K) }
func quantizeQ5K(y []byte, x []float32) { quantizeQ45K(y, x, tensor.Q5_K) }

func quantizeQ6K(y []byte, x []float32) {
	_, bs := mustBlocks(tensor.Q6_K)
	var L [qkK]int8
	var scales [qkK / 16]float32
	for i := range len(x) / qkK {
		v, b := x[i*qkK:(i+1)*qkK], y[i*bs:(i+1)*bs]
		var maxScale, maxAbs float32
		for ib := range qkK / 16 {
			scales[ib] = makeQXQuants(32, v[16*ib:16*ib+16], L[16*ib:])
			if a := absf(scales[ib]); a > maxAbs {
				maxAbs, maxScale = a, scales[ib]
			}
		}
		if maxAbs < groupMaxEps {
			clear(b)
			continue
		}
		l := &lQ6_K
		ql, qh, sc := b[l.QS:l.QS+128], b[l.QH:l.QH+64], b[l.Scales:l.Scales+16]
		iscale := -128 / maxScale
		putF16(b[l.D:], 1/iscale)
		for ib := range sc {
			sc[ib] = uint8(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
		}
		d := f16At(b, l.D)
		for j := range qkK / 16 {
			dj := float32(d * float32(int8(sc[j])))
			if dj == 0 {
				continue
			}
			for ii := range 16 {
				L[16*j+ii] = int8(max(-32, min(31, int(nearestInt(v[16*j+ii]/dj))))) + 32
			}
		}
		for j, o, h := 0, 0, 0; j < qkK; j, o, h = j+128, o+64, h+32 {
			for l := range 32 {
				q1, q2 := uint8(L[j+l])&0xf, uint8(L[j+l+32])&0xf
				q3, q4 := uint8(L[j+l+64])&0xf, uint8(L[j+l+96])&0xf
				ql[o+l] = q1 | q3<<4
				ql[o+l+32] = q2 | q4<<4
				qh[h+l] = uint8(L[j+l])>>4 | uint8(L[j+l+32])>>4<<2 | uint8(L[j+l+64])>>4<<4 | uint8(L[j+l+96])>>4<<6
			}
		}
	}
}
