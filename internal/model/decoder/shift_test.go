package decoder_test

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
	"github.com/loom-inference/loom/internal/tensor"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestShiftRerotates: after a context shift, the first layer's keys and
// values at the moved positions are what a fresh evaluation of the
// shifted tokens stores there (the first layer's keys depend only on the
// token and its position, so this checks the move and the re-rotation;
// deeper layers keep what they computed over the dropped context, as in
// llama.cpp), to F16 rounding — for an F16 cache and an F32/BF16 one. The shifted
// sequence's blocks are its own, and none leak.
func TestShiftRerotates(t *testing.T) {
	m := loadGGUF(t, filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K.f16.gguf"))
	c := m.Config()
	for _, types := range []kvcache.Types{kvcache.DefaultTypes, {K: tensor.F32, V: tensor.BF16}} {
		r := m.NewRunner(model.RunnerOptions{Threads: 2, MaxCtx: 128}).(*decoder.Runner)
		pool, err := kvcache.NewTypedPool(c.NLayers, c.KVDim(), 16, kvcache.Window{}, types)
		if err != nil {
			t.Fatal(err)
		}
		eval := func(toks []int32) *kvcache.Seq {
			seq := pool.NewSeq()
			b := &model.Batch{Tokens: toks, Seqs: []*kvcache.Seq{seq}, Logits: make([]bool, len(toks))}
			for i := range toks {
				b.Pos = append(b.Pos, int32(i))
			}
			b.Logits[len(toks)-1] = true
			if _, err := r.Forward(b, make([]float32, c.NVocab)); err != nil {
				t.Fatal(err)
			}
			return seq
		}
		prompt := make([]int32, 75)
		for i := range prompt {
			prompt[i] = int32(1 + (i*37)%(c.NVocab-1))
		}
		const keep, d = 3, 30
		a := eval(prompt)
		if err := r.Shift(a, keep, d); err != nil {
			t.Fatal(err)
		}
		want := slices.Concat(prompt[:keep], prompt[keep+d:])
		if !slices.Equal(a.Tokens(), want) {
			t.Fatalf("tokens after the shift: %v, want %v", a.Tokens(), want)
		}
		b := eval(want)
		worstK, worstV := 0.0, 0.0
		k1, k2 := make([]float32, c.KVDim()), make([]float32, c.KVDim())
		for p := keep; p < len(want); p++ {
			pool.Key(0, a.Slot(p), k1)
			pool.Key(0, b.Slot(p), k2)
			for i := range k1 {
				worstK = max(worstK, math.Abs(float64(k1[i]-k2[i]))/(1+math.Abs(float64(k2[i]))))
			}
			va, vb := pool.V[0][a.Row(p):a.Row(p)+pool.VWords], pool.V[0][b.Row(p):b.Row(p)+pool.VWords]
			if !slices.Equal(va, vb) {
				worstV++
			}
		}
		if worstK > 2e-3 || worstV > 0 {
			t.Errorf("cache %v: moved keys differ from fresh ones by %.2g (relative), %v value rows differ", types, worstK, worstV)
		}
		a.Free()
		b.Free()
		if pool.Used() != 0 {
			t.Errorf("%d blocks held after both sequences were freed", pool.Used())
		}
		r.Close()
	}
}
