package grammar_test

import (
	"fmt"

	"github.com/loom-inference/loom/grammar"
)

// Constrain output to a JSON Schema: the grammar accepts exactly the
// documents the schema allows.
func Example() {
	g, err := grammar.FromSchema([]byte(`{"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(g.Match(`{"n": 3}`), g.Match(`{"n": 0}`), g.Match(`{}`))
	// Output: true false false
}
