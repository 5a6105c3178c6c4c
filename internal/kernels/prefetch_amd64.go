//go:build amd64 && !purego

package kernels

import (
	"os"
	"strconv"
)

// prefetchAhead is how far ahead of the weights they are reading the
// decode kernels (the packed groups and the one-token F16/F32 dots)
// prefetch, in bytes; the assembly loads it into R15 on entry.
//
// The right distance depends on the CPU. On the Xeon machines of this
// workplace, 4.5 KB ahead raised 1-thread tinyllama Q4_K_M decode from 22
// to 30 tok/s (session 3). On the AMD EPYC (Zen 4) machines it halves the
// rate instead: the same decode at 20 tok/s against 33 without it, F16 at
// 5 against 9, and any distance from 512 bytes up does the same, while
// prefetching the block being read (0 ahead: every cache line of it
// requested at once, before its arithmetic) matches or beats no prefetch
// at all (Q4_0 2-thread 37 → 47 GB/s, Q4_K 27 → 36 GB/s on a matrix
// product out of cache). On AMD EPYC Zen 5 (family 1Ah) it pays again:
// 4.5 KB ahead against 0, one token over 56 matrices of a tinyllama
// layer's shapes (out of cache), 1 thread / 2 threads, GB/s: F16 29-32 →
// 32-35 / 36-37 → 39-42, BF16 27-28 → 32-33 / 38-39 → 40, Q4_K 17 → 25-26
// / 28 → 32-34, Q4_0 and Q8_0 within noise. So AMD family 19h (Zen 3
// and 4) takes 0 and every other CPU 4.5 KB; LOOM_PREFETCH_AHEAD (bytes,
// 0 to 65536) overrides it to measure a new machine. Results never depend
// on it: a prefetch only moves data.
//
// packedPrefetch: the one-token kernels of packed Q4_0 (gemvQ4_0r16s4),
// Q8_0 (gemvQ8_0x16s3), Q4_K (gemvQ4_Kx16) and Q6_K (gemvQ6_Kx16) prefetch their weights
// (PFSKIP jumps past the prefetches when it is off). On the Zen 4 machines
// they read faster without: since the weights moved to huge pages
// (sessions 25 and 27), prefetching the block being read (0 ahead) costs
// more than it brings. Alternating loom bench -p 1 -n 64 -r 2 on
// tinyllama-1.1b, without ÷ with, three rounds: one thread Q4_0
// 1.01–1.04, Q8_0 1.04–1.07, Q4_K_M 1.01–1.04; two threads Q4_0
// 0.98–1.03, Q8_0 1.01–1.06, Q4_K_M 1.01–1.05 (BenchmarkQuantDecode one
// thread, GB/s: Q4_K 25.0–27.4 → 28.6–29.7). Q6_K's kernel kept its prefetch
// (one thread 0.97–1.0 without) until its groups were cache-line aligned
// (session 28): since, 29.2/28.8/31.9 → 32.0/34.1/29.9 GB/s without (one
// thread, 5632×2048, three rounds). So AMD family 19h runs these kernels
// without; LOOM_PACKED_PREFETCH=0 or 1 overrides it, and setting
// LOOM_PREFETCH_AHEAD (to measure a distance) turns it on. Where it is
// off at start-up, packed Q4_K's one-token products read two streams when
// one thread runs them (registerQ4KStreams); either variable set to turn
// prefetching on also keeps Q4_K on one stream, and LOOM_PACKED_PREFETCH=0
// gives other CPUs the two streams, never measured there.
var prefetchAhead, packedPrefetch = prefetchDefaults()

// gemmPrefetch: the F16 float GEMM's software prefetches (gemm_float.go):
// on one thread, the next weight tile's rows asked for in L2 a slice per
// panel while a tile runs, and in every pass's first panel, which reads
// the rows in place, the rows asked for in L1 256 bytes ahead of its
// loads. They were measured on the Zen 4 machines of this workplace only:
// one thread 3–5% faster with the next tile's before the weights moved to
// huge pages (935ebad), noise once they sat there (session 26: 55.7 → 55.9
// tok/s without, 24 runs), and in session 30 (tinyllama-1.1b F16, loom
// bench -p 128 -n 0 -r 3, alternating, medians) one thread 54.3 → 55.7
// without the next tile's (ten rounds, pair median 1.01), +1% more without
// the first panel's too (eight, pair median 1.011), two threads (which
// never ask for the next tile) 105.9 → 104.9 without the first panel's
// (noise); against the build with both, twelve rounds at one thread, 56.1
// → 56.3 (pair median 1.005). The gain is at the noise's size, but no
// measurement since the huge pages found a loss beyond noise, and dropping
// them removes the per panel calls. So AMD family 19h runs the F16 GEMM
// without; other CPUs, not measured, keep them. LOOM_F16_GEMM_PREFETCH=0
// or 1 overrides the choice (LOOM_PREFETCH_AHEAD does not touch it). It is
// a package variable, set by its initializer (all of which run before any
// init), because gemm_float_amd64.go's init reads it. Results never
// depend on it.
var gemmPrefetch = gemmPrefetchDefault()

func gemmPrefetchDefault() bool {
	if v := os.Getenv("LOOM_F16_GEMM_PREFETCH"); v == "0" || v == "1" {
		return v == "1"
	}
	return !(cpuVendor() == "AuthenticAMD" && cpuFamily() == 0x19)
}

// prefetchDefaults is prefetchAhead and packedPrefetch for this CPU and
// environment. They are package variables set by their initializers
// (all of which run before any init) because packed_amd64.go's init reads
// packedPrefetch.
func prefetchDefaults() (ahead int64, packed bool) {
	ahead, packed = 4608, true
	if cpuVendor() == "AuthenticAMD" && cpuFamily() == 0x19 {
		ahead, packed = 0, false
	}
	if v, err := strconv.Atoi(os.Getenv("LOOM_PREFETCH_AHEAD")); err == nil && v >= 0 && v <= 1<<16 {
		ahead, packed = int64(v), true
	}
	if v := os.Getenv("LOOM_PACKED_PREFETCH"); v == "0" || v == "1" {
		packed = v == "1"
	}
	return ahead, packed
}

//go:noescape
func cpuid(leaf, sub uint32) (a, b, c, d uint32)

// cpuFamily is CPUID leaf 1's display family (base family, plus the
// extended family where the base is 0Fh).
func cpuFamily() uint32 {
	a, _, _, _ := cpuid(1, 0)
	f := a >> 8 & 0xf
	if f == 0xf {
		f += a >> 20 & 0xff
	}
	return f
}

// cpuVendor is CPUID leaf 0's vendor string ("GenuineIntel",
// "AuthenticAMD", …).
func cpuVendor() string {
	_, b, c, d := cpuid(0, 0)
	var v [12]byte
	for i, r := range []uint32{b, d, c} {
		v[4*i], v[4*i+1], v[4*i+2], v[4*i+3] = byte(r), byte(r>>8), byte(r>>16), byte(r>>24)
	}
	return string(v[:])
}
