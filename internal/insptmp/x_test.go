package insp

import (
	"fmt"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/tokenizer"
)

func TestX(t *testing.T) {
	f, _ := gguf.Open("/work/shared/models/tinystories-656k/gguf/TinyStories-656K.f16.gguf")
	g, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	h, err := tokenizer.FromHFJSON("/work/shared/models/tinystories-656k/hf/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Once upon a time", "Once upon a time, there was a little girl named Lily. She loved to play outside!", " hello  world\n\nThe end.", "Tom and Sue went to the park. They saw a big dog."} {
		a := g.Encode(s, true, false)
		b := h.Encode(s, true, false)
		fmt.Println(a)
		fmt.Println(b)
	}
}
