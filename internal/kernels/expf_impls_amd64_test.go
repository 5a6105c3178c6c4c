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
