package kernels

// Float32 vector kernels of the recurrent layers: ggml_vec_dot_f32,
// ggml_vec_mad_f32 and ggml_vec_scale_f32 (the fused gated delta net,
// ggml_gated_delta_net, is built from them), and the inner loop of
// Mamba-2's selective scan (ggml_ssm_scan_f32 with a scalar decay per
// head). Each has a portable reference (the *Generic functions: the plain
// math, sums left to right) and SIMD versions registered by
// recurrent_amd64.go, which reproduce llama.cpp's CPU build bit for bit:
// the orders are written out below as portable Go (f32Order) and the tests
// hold every SIMD version to its order.
//
// What llama.cpp's x86 builds compute (GCC 11, -O3; read from the
// disassembly of node-llama-cpp's libggml-cpu-zen4.so and -haswell.so, and
// pinned to their results by TestRecurrentGGML):
//
//   - ggml_vec_dot_f32: GGML_F32_ARR = 4 accumulators of GGML_F32_EPR
//     lanes (AVX-512: 16, a 64-element step; AVX2: 8, a 32-element step),
//     acc = fma(x, y, acc), element e in lane e mod step; then
//     GGML_F32_VEC_REDUCE (f32Order.reduce). The leftover loop
//     `sumf += x[i]*y[i]` is auto-vectorized by GCC as an in-order
//     reduction: chunks of EPR elements whose products are rounded
//     (vmulps) and then added to sumf one by one, one chunk of EPR/2 the
//     same way, and the last < EPR/2 elements as sumf = fma(x, y, sumf).
//   - ggml_vec_mad_f32: y = fma(x, v, y) for every element, vector part and
//     leftovers alike (GGML_F32_VEC_FMA; GCC contracts `y[i] += x[i]*v`).
//   - ggml_vec_scale_f32: y = y·v, one rounding.
//   - ggml_ssm_scan_f32 (Mamba-2): GCC contracts the intrinsics
//     `s·dA + B·x_dt` (GGML_F32_VEC_MUL, _MUL, _ADD) into
//     v = fma(s, dA, B·x_dt) with B·x_dt rounded, and the leftovers'
//     `(s0[i]*dA) + (B[ig]*x_dt)` the same way; Σ v·C is accumulated as the
//     dot's vector part (fma into 4 accumulators, REDUCE), then the
//     leftovers as sumf = fma(v, C, sumf) (not vectorized: a plain loop).

var (
	dotF32Op   = newOp("DotF32", dotF32Generic)
	madF32Op   = newOp("MadF32", madF32Generic)
	scaleF32Op = newOp("ScaleF32", scaleF32Generic)
	deltaOp    = newOp("GatedDeltaRule", gatedDeltaRuleGeneric)
	ssmScanOp  = newOp("SSMScan", ssmScanGeneric)
)

// DotF32 returns Σ x[i]·y[i] over len(x) elements (y at least as long), as
// ggml_vec_dot_f32.
func DotF32(x, y []float32) float32 { return dotF32Op.run(x, y) }

// MadF32 computes y[i] += x[i]·v (one fused multiply-add per element, as
// ggml_vec_mad_f32) over len(y) elements.
func MadF32(y, x []float32, v float32) { madF32Op.run(y, x, v) }

// ScaleF32 computes y[i] *= v (ggml_vec_scale_f32).
func ScaleF32(y []float32, v float32) { scaleF32Op.run(y, v) }

// GatedDeltaRule runs one token of the gated delta rule (ggml_gated_delta_net
// with a scalar gate) on one head's S×S state, S = len(q), stored as rows
// j = 0..S−1 of S values (Loom's [value j][key i], ggml's transposed
// s_out): every element is scaled by decay, then for each row
// d = (v[j] − row·k)·beta, row += d·k, and out[j] = (row·q)·scale, the
// products in DotF32's order and the update MadF32's. q, k, v and out hold
// S values; state S·S.
func GatedDeltaRule(state, q, k, v, out []float32, decay, beta, scale float32) {
	deltaOp.run(state, q, k, v, out, decay, beta, scale)
}

// SSMScan runs one token of Mamba-2's selective scan for one head:
// channel i of len(x) has the N = len(b) states state[i·N:(i+1)·N], each
// updated to s' = s·dA + b[n]·(x[i]·dt), and y[i] = Σ s'·c[n] (without the
// D skip term, which ggml adds as a separate op). c holds N values, y
// len(x), state len(x)·N.
func SSMScan(state, x, b, c, y []float32, dA, dt float32) {
	ssmScanOp.run(state, x, b, c, y, dA, dt)
}

func dotF32Generic(x, y []float32) float32 {
	y = y[:len(x)]
	var s float32
	for i := range x {
		s += x[i] * y[i]
	}
	return s
}

func madF32Generic(y, x []float32, v float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += float32(x[i] * v) // rounded before the sum, whatever GOAMD64 (no fused multiply-add)
	}
}

func scaleF32Generic(y []float32, v float32) {
	for i := range y {
		y[i] *= v
	}
}

func gatedDeltaRuleGeneric(state, q, k, v, out []float32, decay, beta, scale float32) {
	gatedDeltaRuleWith(dotF32Generic, madF32Generic, scaleF32Generic, state, q, k, v, out, decay, beta, scale)
}

// gatedDeltaRuleWith is the delta rule from the vector operations, row by
// row: each row's values depend only on that row, so this is ggml's
// whole-state scale, then all the dots with k, then all the updates and
// dots with q, in another order of rows.
func gatedDeltaRuleWith(dot func(x, y []float32) float32, mad func(y, x []float32, v float32), scal func(y []float32, v float32),
	state, q, k, v, out []float32, decay, beta, scale float32) {
	s := len(q)
	k, v, out = k[:s], v[:s], out[:s]
	state = state[:s*s]
	for j := range s {
		row := state[j*s : (j+1)*s]
		scal(row, decay)
		d := (v[j] - dot(row, k)) * beta
		mad(row, k, d)
		out[j] = dot(row, q) * scale
	}
}

func ssmScanGeneric(state, x, b, c, y []float32, dA, dt float32) {
	n := len(b)
	c, y, state = c[:n], y[:len(x)], state[:len(x)*n]
	for i, xi := range x {
		xdt := xi * dt
		si := state[i*n : (i+1)*n]
		var sum float32
		for e := range si {
			v := float32(si[e]*dA) + float32(b[e]*xdt)
			sum += float32(v * c[e])
			si[e] = v
		}
		y[i] = sum
	}
}

// f32Order is the summation order of one of llama.cpp's x86 builds for the
// float32 vector functions: step = GGML_F32_STEP elements per iteration
// in GGML_F32_ARR = 4 registers of epr = GGML_F32_EPR lanes.
type f32Order struct{ step, epr int }

// orderAVX512 is the order of llama.cpp's zen4 build, the one the
// recordings were made with; every SIMD kernel keeps it (the AVX2 ones in
// pairs of 8-lane registers). The haswell build's, f32Order{32, 8}, is
// pinned to its results in the tests.
var orderAVX512 = f32Order{64, 16}

// reduce is GGML_F32_VEC_REDUCE of the step lanes of acc (clobbered): the
// four registers folded by halves (x0+x2, x1+x3, then x0+x1), then the
// lanes of x0 — AVX-512: _mm512_reduce_add_ps, a halving tree (8, 4, 2,
// 1 apart); AVX2: t = low128 + high128, then two _mm_hadd_ps:
// (t0+t1) + (t2+t3).
func (o f32Order) reduce(acc []float32) float32 {
	h := len(acc) / 2
	for ; h >= o.epr; h /= 2 {
		for l := range h {
			acc[l] += acc[l+h]
		}
	}
	if o.epr == 16 {
		for ; h >= 1; h /= 2 {
			for l := range h {
				acc[l] += acc[l+h]
			}
		}
		return acc[0]
	}
	t0, t1, t2, t3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (t0 + t1) + (t2 + t3)
}

// dot is ggml_vec_dot_f32 in this order, leftovers as GCC vectorizes them.
func (o f32Order) dot(x, y []float32) float32 {
	n := len(x)
	y = y[:n]
	var lanes [64]float32
	acc := lanes[:o.step]
	np := n &^ (o.step - 1)
	for e := range np {
		acc[e%o.step] = FMA32(x[e], y[e], acc[e%o.step])
	}
	s := o.reduce(acc)
	e := np
	for ; n-e >= o.epr; e += o.epr {
		for i := e; i < e+o.epr; i++ {
			s += float32(x[i] * y[i])
		}
	}
	if n-e >= o.epr/2 {
		for i := e; i < e+o.epr/2; i++ {
			s += float32(x[i] * y[i])
		}
		e += o.epr / 2
	}
	for ; e < n; e++ {
		s = FMA32(x[e], y[e], s)
	}
	return s
}

// madOrder is ggml_vec_mad_f32 in every x86 build: one fma per element.
func madOrder(y, x []float32, v float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] = FMA32(x[i], v, y[i])
	}
}

// gatedDeltaRule is ggml_gated_delta_net in this order.
func (o f32Order) gatedDeltaRule(state, q, k, v, out []float32, decay, beta, scale float32) {
	gatedDeltaRuleWith(o.dot, madOrder, scaleF32Generic, state, q, k, v, out, decay, beta, scale)
}

// ssmScan is ggml_ssm_scan_f32's Mamba-2 loop in this order.
func (o f32Order) ssmScan(state, x, b, c, y []float32, dA, dt float32) {
	n := len(b)
	c, y, state = c[:n], y[:len(x)], state[:len(x)*n]
	np := n &^ (o.step - 1)
	var lanes [64]float32
	acc := lanes[:o.step]
	for i, xi := range x {
		xdt := xi * dt
		si := state[i*n : (i+1)*n]
		clear(acc)
		for e := range np {
			v := FMA32(si[e], dA, b[e]*xdt)
			acc[e%o.step] = FMA32(v, c[e], acc[e%o.step])
			si[e] = v
		}
		sum := o.reduce(acc)
		for e := np; e < n; e++ {
			v := FMA32(si[e], dA, b[e]*xdt)
			sum = FMA32(v, c[e], sum)
			si[e] = v
		}
		y[i] = sum
	}
}
