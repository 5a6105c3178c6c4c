package chat_test

import (
	"context"
	"fmt"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/sample"
)

// A conversation lays each turn out with the model's chat template (or a
// built-in) and keeps its cache between turns: the second turn evaluates
// only what the first did not leave.
func ExampleNewConversation() {
	path, err := engine.FindModel(engine.DefaultModel)
	if err != nil {
		panic(err)
	}
	e, err := engine.Load(path, engine.Options{Threads: 2})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	t, err := chat.ForModel(e, "")
	if err != nil {
		panic(err)
	}
	c := chat.NewConversation(e, t, "You tell short stories.")
	defer c.Close()
	req := engine.Request{MaxTokens: 16, Sample: sample.Params{Temp: 0}}
	for _, user := range []string{"Tell me about a cat.", "And then?"} {
		if _, _, err := c.Reply(context.Background(), user, req, func(string) error { return nil }); err != nil {
			panic(err)
		}
	}
	fmt.Println(len(c.Msgs), c.Reused > 0)
	// Output: 5 true
}
