package safetensors_test

import (
	"bytes"
	"fmt"

	"github.com/loom-inference/loom/safetensors"
)

// Write two tensors and read them back.
func Example() {
	var buf bytes.Buffer
	err := safetensors.Write(&buf, []safetensors.Tensor{
		{Name: "w", DType: "F16", Shape: []int64{2, 3}, Data: make([]byte, 12)},
		{Name: "b", DType: "F32", Shape: []int64{3}, Data: make([]byte, 12)},
	}, map[string]string{"format": "pt"})
	if err != nil {
		panic(err)
	}
	f, err := safetensors.Parse("example.safetensors", buf.Bytes())
	if err != nil {
		panic(err)
	}
	w, _ := f.Tensor("w")
	fmt.Println(len(f.Tensors), w.DType, w.Shape, w.Elems(), f.Meta["format"])
	// Output: 2 F16 [2 3] 6 pt
}
