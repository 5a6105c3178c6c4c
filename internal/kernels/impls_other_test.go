//go:build !amd64 || purego

package kernels

func simdExpImpls() []struct {
	name string
	silu func(gate, up []float32)
	esum func(y, x []float32, max float32) float64
} {
	return nil
}

func simdAttnImpls() []struct {
	name   string
	scores func(out, q []float32, kT []uint16, off []int32, o AttnOrder)
	mix    func(out, p []float32, v []uint16, off []int32, nkv int, o AttnOrder)
} {
	return nil
}
