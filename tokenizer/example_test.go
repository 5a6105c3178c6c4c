package tokenizer_test

import (
	"fmt"

	"github.com/loom-inference/loom/engine"
)

// Tokenize with a model's vocabulary and decode back.
func Example() {
	path, err := engine.FindModel(engine.DefaultModel)
	if err != nil {
		panic(err)
	}
	v, err := engine.LoadVocab(path)
	if err != nil {
		panic(err)
	}
	ids := v.Encode("Once upon a time", true, false)
	fmt.Printf("%v %q\n", ids, v.Decode(ids[1:]))
	// Output: [1 80 147 201 282 57] " Once upon a time"
}
