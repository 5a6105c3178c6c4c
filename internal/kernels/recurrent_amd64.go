//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

//go:noescape
func dotF32AVX512(n int, x, y *float32) float32

//go:noescape
func dotF32AVX2(n int, x, y *float32) float32

//go:noescape
func madF32AVX512(n int, y, x *float32, v float32)

//go:noescape
func madF32AVX2(n int, y, x *float32, v float32)

//go:noescape
func scaleF32AVX512(n int, y *float32, v float32)

//go:noescape
func scaleF32AVX2(n int, y *float32, v float32)

//go:noescape
func gatedDeltaAVX512(s int, state, q, k, v, out *float32, decay, beta, scale float32)

//go:noescape
func gatedDeltaAVX2(s int, state, q, k, v, out *float32, decay, beta, scale float32)

//go:noescape
func ssmScanAVX512(p, n int, state, x, b, c, y *float32, dA, dt float32)

//go:noescape
func ssmScanAVX2(p, n int, state, x, b, c, y *float32, dA, dt float32)

// recKernels is one build's set of recurrent kernels (recurrent_amd64.s):
// the assembly takes any length except the delta rule, which takes whole
// steps (other head sizes run the same build's vector functions row by
// row: the same order).
type recKernels struct {
	name  string
	order f32Order
	dot   func(n int, x, y *float32) float32
	mad   func(n int, y, x *float32, v float32)
	scale func(n int, y *float32, v float32)
	delta func(s int, state, q, k, v, out *float32, decay, beta, scale float32)
	scan  func(p, n int, state, x, b, c, y *float32, dA, dt float32)
}

func (r recKernels) register() {
	dot := func(x, y []float32) float32 {
		n := len(x)
		if n == 0 {
			return 0
		}
		y = y[:n]
		return r.dot(n, &x[0], &y[0])
	}
	mad := func(y, x []float32, v float32) {
		n := len(y)
		if n == 0 {
			return
		}
		x = x[:n]
		r.mad(n, &y[0], &x[0], v)
	}
	scale := func(y []float32, v float32) {
		if len(y) > 0 {
			r.scale(len(y), &y[0], v)
		}
	}
	dotF32Op.register(r.name, dot)
	madF32Op.register(r.name, mad)
	scaleF32Op.register(r.name, scale)
	deltaOp.register(r.name, func(state, q, k, v, out []float32, decay, beta, sc float32) {
		s := len(q)
		if s == 0 || s%r.order.step != 0 {
			gatedDeltaRuleWith(dot, mad, scale, state, q, k, v, out, decay, beta, sc)
			return
		}
		k, v, out, state = k[:s], v[:s], out[:s], state[:s*s]
		r.delta(s, &state[0], &q[0], &k[0], &v[0], &out[0], decay, beta, sc)
	})
	ssmScanOp.register(r.name, func(state, x, b, c, y []float32, dA, dt float32) {
		p, n := len(x), len(b)
		if p == 0 {
			return
		}
		y = y[:p]
		if n == 0 {
			clear(y)
			return
		}
		c, state = c[:n], state[:p*n]
		r.scan(p, n, &state[0], &x[0], &b[0], &c[0], &y[0], dA, dt)
	})
}

// The AVX-512 build's order (the one the recordings were made with) on
// every CPU with AVX2: the AVX2 kernels keep it in pairs of 8-lane
// registers, so a hybrid model's logits do not depend on which of the two
// runs. llama.cpp's haswell build sums in 32-element steps instead
// (orderAVX2 in the tests, pinned to its results); on a 512-token prompt of
// qwen35moe-mini its logits differ from the zen4 build's by up to 0.42
// where routing near-ties flip, which no recording's tolerance covers.
func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		recKernels{"avx2", orderAVX512, dotF32AVX2, madF32AVX2, scaleF32AVX2, gatedDeltaAVX2, ssmScanAVX2}.register()
	}
	if cpu.X86.HasAVX512F {
		recKernels{"avx512", orderAVX512, dotF32AVX512, madF32AVX512, scaleF32AVX512, gatedDeltaAVX512, ssmScanAVX512}.register()
	}
}
