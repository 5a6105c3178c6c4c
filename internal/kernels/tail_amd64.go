//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

//go:noescape
func sumTailVNNI(nb int, row, tail *byte, off int32)

//go:noescape
func q8TailVNNI(nb int, row, tail *byte, off int32)

// tailVNNI is the AVX-512 VNNI form of a tail computed by ref (sumTail or
// q8Tail with the same off; k the kernel, per the block bytes of the
// tail), bit-identical to it (TestTailVNNI), where the CPU has VNNI on
// 256-bit registers (AVX-512 VL); ref itself otherwise. The portable loop
// was 1.9% of one-thread Q4_0 decode and, serial, more at two threads.
func tailVNNI(ref func(row []byte, n int), blockBytes int, off int32,
	k func(nb int, row, tail *byte, off int32)) func(row []byte, n int) {
	if !(cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI) {
		return ref
	}
	return func(row []byte, n int) {
		nb := lQ8_0.Blocks(n)
		if nb == 0 {
			return
		}
		// Every byte read or written is inside row.
		_ = row[nb*lQ8_0.Size+nb*blockBytes-1]
		k(nb, &row[0], &row[nb*lQ8_0.Size], off)
	}
}

// sumTailFast is sumTail with its VNNI form.
func sumTailFast(off int32) (func(row []byte, n int), func(n int) int) {
	ref, size := sumTail(off)
	return tailVNNI(ref, sumTailBlock, off, sumTailVNNI), size
}

// q8TailFast is q8Tail with its VNNI form.
func q8TailFast(off int32) (func(row []byte, n int), func(n int) int) {
	ref, size := q8Tail(off)
	return tailVNNI(ref, q8TailBlock, off, q8TailVNNI), size
}
