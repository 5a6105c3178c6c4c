package sample_test

import (
	"fmt"

	"github.com/loom-inference/loom/sample"
)

// Sample with top-k, top-p and a temperature, then see what the chain
// kept.
func Example() {
	s := sample.New(sample.Params{Temp: 0.8, TopK: 3, TopP: 0.9, Seed: 42})
	logits := []float32{1.0, 4.0, 3.5, -2.0, 3.9}
	id := s.Sample(logits, nil)
	tr := s.Last()
	fmt.Println(tr.TopK, tr.TopP, tr.Chosen == id)
	// Output: 3 3 true
}
