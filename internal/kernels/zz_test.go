//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

func TestZZ2t(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	mk := func(typ tensor.DType, rows, cols, mb int) []*Matrix {
		rb, _ := tensor.RowBytes(typ, uint64(cols))
		ms := make([]*Matrix, 1+mb<<20/(rows*int(rb)))
		row := randomRow(rng, typ, cols)
		for i := range ms {
			data := make([]byte, 0, rows*int(rb))
			for range rows {
				data = append(data, row...)
			}
			ms[i], _ = NewMatrix("w", typ, rows, cols, data)
		}
		PackAll(ms)
		return ms
	}
	f16 := mk(tensor.F16, 5632, 2048, 250)
	q40 := mk(tensor.Q4_0, 5632, 2048, 200)
	q4k := mk(tensor.Q4_K, 5632, 2048, 200)
	x := make([]float32, 2048)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, 5632)
	p := parallel.New(2)
	defer p.Close()
	var ws Workspace
	ws.Reserve(1, append(append(append([]*Matrix{}, f16...), q40...), q4k...))
	run := func(ms []*Matrix) float64 {
		t0 := time.Now()
		bytes := 0
		for _, m := range ms {
			ws.MatMul(p, m, x, 1, out)
			if m.packed != nil {
				bytes += len(m.packed)
			} else {
				bytes += len(m.Data)
			}
		}
		return float64(bytes) / time.Since(t0).Seconds() / 1e9
	}
	f0 := table[tensor.Q4_0].repack.format
	if f0 == nil {
		f0 = table[tensor.Q4_0].packed
	}
	fk := table[tensor.Q4_K].packed
	g0, s0 := f0.gemvS, f0.streams
	gk := fk.gemvS
	type rec struct{ roof, q40s4, q40s1, q4k1, q4k2 float64 }
	var recs []rec
	for r := 0; r < 40; r++ {
		var c rec
		c.roof = run(f16)
		f0.gemvS, f0.streams = g0, s0
		c.q40s4 = run(q40)
		f0.gemvS, f0.streams = nil, 0
		c.q40s1 = run(q40)
		f0.gemvS, f0.streams = g0, s0
		fk.gemvS, fk.streams = nil, 0
		c.q4k1 = run(q4k)
		fk.gemvS, fk.streams, fk.streamsAlone = gk, 2, false
		c.q4k2 = run(q4k)
		fk.streamsAlone = true
		recs = append(recs, c)
	}
	for _, fast := range []bool{false, true} {
		var rs [5][]float64
		for _, c := range recs {
			if (c.roof > 45) != fast {
				continue
			}
			for i, v := range []float64{c.roof, c.q40s4 / c.roof, c.q40s1 / c.roof, c.q4k1 / c.roof, c.q4k2 / c.roof} {
				rs[i] = append(rs[i], v)
			}
		}
		if len(rs[0]) == 0 {
			continue
		}
		med := func(x []float64) float64 { y := append([]float64(nil), x...); sort.Float64s(y); return y[len(y)/2] }
		fmt.Printf("fast=%v rounds %d roof %.1f: q4_0 s4 %.2f s1 %.2f; q4_K s1 %.2f s2 %.2f\n", fast, len(rs[0]), med(rs[0]), med(rs[1]), med(rs[2]), med(rs[3]), med(rs[4]))
	}
}
