package gguf_test

import (
	"bytes"
	"fmt"

	"github.com/loom-inference/loom/gguf"
)

// Write a GGUF file with one metadata key and one tensor, then read it.
func Example() {
	w := gguf.NewWriter()
	w.Set("general.architecture", "llama")
	if err := w.AddTensor("token_embd.weight", gguf.F32, []uint64{2, 1}, make([]byte, 8)); err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		panic(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		panic(err)
	}
	arch, _ := f.String("general.architecture")
	t, _ := f.Tensor("token_embd.weight")
	fmt.Println(arch, t.Name, t.Type, t.Dims, t.Size)
	// Output: llama token_embd.weight F32 [2 1] 8
}
