package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// 2048-row × 5632 F16 matrices, 8 of them (185 MB), n = 128.
func BenchmarkZZPrepacked(b *testing.B) {
	const rows, k, n, nm = 2048, 5632, 128, 8
	rng := rand.New(rand.NewPCG(7, 8))
	typ := tensor.F16
	g := table[typ].gemm
	var ms []*Matrix
	var packed [][]byte
	for range nm {
		m, _ := NewMatrix("w", typ, rows, k, randomFloatRows(rng, typ, rows, k))
		ms = append(ms, m)
		chunks := k / 16
		pk := make([]byte, rows*k*2)
		for tile := range rows / 4 {
			var ptrs [4]*byte
			for i := range 4 {
				ptrs[i] = &m.Data[(4*tile+i)*m.RowBytes]
			}
			g.pack(k, &ptrs, &pk[tile*chunks*128])
		}
		packed = append(packed, pk)
	}
	x := make([]float32, n*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, n*rows)
	var ws Workspace
	ws.Reserve(n, ms)
	p := parallel.New(1)
	defer p.Close()
	act, ldb := ws.floatInput(p, ms[0], g, x, n, true)
	flops := float64(2 * rows * k * n)
	b.Run("current", func(b *testing.B) {
		i := 0
		for b.Loop() {
			m := ms[i%nm]
			i++
			ws.gemm = gemmTask{m: m, g: g, act: act, ldb: ldb, n: n, out: out, tiles: &ws.tiles, prefetch: true}
			p.RunTask(rows/4, 1, &ws.gemm)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("current-nopf", func(b *testing.B) {
		i := 0
		for b.Loop() {
			m := ms[i%nm]
			i++
			ws.gemm = gemmTask{m: m, g: g, act: act, ldb: ldb, n: n, out: out, tiles: &ws.tiles, prefetch: false}
			p.RunTask(rows/4, 1, &ws.gemm)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("prepacked+pf", func(b *testing.B) {
		i := 0
		chunks := k / 16
		tb := chunks * 128
		cs := (tb/4 + 21) / 22
		cs = (cs + 63) &^ 63
		for b.Loop() {
			pk := packed[i%nm]
			i++
			for tile := range rows / 4 {
				w := &pk[tile*tb]
				for pi := range 22 {
					if tile+1 < rows/4 {
						var r4 [4]*byte
						nb := (tile + 1) * tb
						for q := range 4 {
							r4[q] = &pk[nb+q*tb/4]
						}
						if off := pi * cs; off < tb/4 {
							prefetchRows(&r4, off, min(cs, tb/4-off))
						}
					}
					j, nt := panelSpan(n, pi)
					g.tiles[nt](chunks, w, &act[pi*ldb], &out[j*rows+4*tile], 4*rows)
				}
			}
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("prepacked-noout", func(b *testing.B) {
		i := 0
		chunks := k / 16
		var cc [64]float32
		for b.Loop() {
			pk := packed[i%nm]
			i++
			for tile := range rows / 4 {
				w := &pk[tile*chunks*128]
				for pi := range 22 {
					_, nt := panelSpan(n, pi)
					g.tiles[nt](chunks, w, &act[pi*ldb], &cc[0], 16)
				}
			}
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("prepacked", func(b *testing.B) {
		i := 0
		chunks := k / 16
		for b.Loop() {
			pk := packed[i%nm]
			i++
			for tile := range rows / 4 {
				w := &pk[tile*chunks*128]
				for pi := range 22 {
					j, nt := panelSpan(n, pi)
					g.tiles[nt](chunks, w, &act[pi*ldb], &out[j*rows+4*tile], 4*rows)
				}
			}
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

func BenchmarkZZTileK(b *testing.B) {
	for _, chunks := range []int{128, 352} {
		w := make([]byte, chunks*128)
		for i := range w {
			w[i] = byte(i*7) & 0x3b
		}
		c := make([]float32, 4*6*128)
		bb := make([]byte, 22*chunks*384+64)
		b.Run("k"+string(rune('0'+chunks/128)), func(b *testing.B) {
			for b.Loop() {
				for p := range 22 {
					gemmF16x4x6(chunks, &w[0], &bb[p*chunks*384], &c[0], 16)
				}
			}
			b.ReportMetric(float64(2*4*6*16*chunks*22)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
