//go:build amd64 && !purego

package kernels

func simdExpImpls() (out []struct {
	name string
	silu func(gate, up []float32)
	esum func(y, x []float32, max float32) float64
}) {
	for _, e := range expImpls {
		out = append(out, struct {
			name string
			silu func(gate, up []float32)
			esum func(y, x []float32, max float32) float64
		}{e.name, e.wrapS, e.wrapE})
	}
	return out
}

func simdAttnImpls() (out []struct {
	name   string
	scores func(out, q []float32, kT []uint16, off []int32, o AttnOrder)
	mix    func(out, p []float32, v []uint16, off []int32, nkv int, o AttnOrder)
}) {
	for _, a := range attnImpls {
		out = append(out, struct {
			name   string
			scores func(out, q []float32, kT []uint16, off []int32, o AttnOrder)
			mix    func(out, p []float32, v []uint16, off []int32, nkv int, o AttnOrder)
		}{a.name, a.scores, a.mix})
	}
	return out
}
