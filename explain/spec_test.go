package explain_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/explain"
)

// TestSpeculation: with speculative decoding the report groups the timed
// run's tokens by forward pass — drafts accepted, the model's own token,
// drafts rejected — and the tokens are those of the run without it. The
// model drafting for itself greedily has every draft accepted; n-gram
// drafts at a temperature have some rejected, each with the token that
// replaced it. Text, JSON and HTML show the section; without speculation
// there is none.
func TestSpeculation(t *testing.T) {
	ref := refByFile(t, "real-TinyStories-656K-Q8_0-p1.jsonl")
	path := ref.ModelPath(t)
	e, err := engine.Load(path, engine.Options{Threads: 1, CtxLen: 128, DraftModel: path})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const prompt = "Tom has a red ball. Tom has a red ball. Tom has a red ball. Tom"
	for _, c := range []struct {
		name string
		temp float32
		spec engine.SpecParams
	}{
		{"self-draft", 0, engine.SpecParams{Mode: engine.SpecDraft, Max: 3, Fixed: true}},
		{"ngram", 0.9, engine.SpecParams{Mode: engine.SpecNgram, Max: 4, Fixed: true}},
	} {
		o := explain.Options{Prompt: prompt, Steps: 20, Temp: c.temp, Seed: 3, Machine: fixedMachine}
		plain, err := explain.Run(e, o)
		if err != nil {
			t.Fatal(err)
		}
		if plain.Speculation != nil || plain.Cost.Decode.Passes != 0 {
			t.Errorf("%s: a report without speculation has a speculation section", c.name)
		}
		o.Spec = c.spec
		r, err := explain.Run(e, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Sampling.Text != plain.Sampling.Text || r.Sampling.Chosen != plain.Sampling.Chosen {
			t.Errorf("%s: %q with speculation, %q without", c.name, r.Sampling.Text, plain.Sampling.Text)
		}
		sp := r.Speculation
		if sp == nil || sp.Mode != c.spec.Mode || sp.Tokens != 21 || len(sp.Steps) < 2 || sp.Drafted == 0 {
			t.Fatalf("%s: speculation %+v", c.name, sp)
		}
		// The steps spell the generated tokens in order; the counts add up.
		var ids []int32
		accepted, drafted := 0, 0
		for i, st := range sp.Steps {
			for _, tk := range st.Accepted {
				ids = append(ids, tk.ID)
			}
			if st.Token != nil {
				ids = append(ids, st.Token.ID)
			}
			accepted += len(st.Accepted)
			drafted += len(st.Accepted) + len(st.Rejected)
			if st.Why == "" || i == 0 && (len(st.Accepted) > 0 || len(st.Rejected) > 0) {
				t.Errorf("%s: step %d %+v", c.name, i, st)
			}
			if len(st.Rejected) > 0 && (st.Token == nil || st.Token.ID == st.Rejected[0].ID || !strings.Contains(st.Why, "where the draft said")) {
				t.Errorf("%s: step %d: a rejection without the token that replaced it: %+v", c.name, i, st)
			}
		}
		want := idsOf(plain.Sampling.Generated)
		if len(ids) < len(want) || !slices.Equal(ids[:len(want)], want) {
			t.Errorf("%s: the steps spell %v, the run without speculation %v", c.name, ids, want)
		}
		if accepted != sp.Accepted || drafted != sp.Drafted {
			t.Errorf("%s: steps hold %d of %d drafts accepted, the counts say %d of %d", c.name, accepted, drafted, sp.Accepted, sp.Drafted)
		}
		if c.spec.Mode == engine.SpecDraft && (sp.Accepted != sp.Drafted || len(sp.Steps) > 1+(20+3)/4) {
			t.Errorf("self-draft: %d of %d accepted in %d passes: want all, 4 tokens a pass", sp.Accepted, sp.Drafted, len(sp.Steps))
		}
		if d := r.Cost.Decode; d.Passes == 0 || d.Passes >= d.Tokens && sp.Accepted > 0 || d.BytesPerToken >= plain.Cost.Decode.BytesPerToken && sp.Accepted > 0 {
			t.Errorf("%s: decode cost %+v: want fewer passes than tokens and fewer weight bytes per token than %v", c.name, d, plain.Cost.Decode.BytesPerToken)
		}
		var text, page bytes.Buffer
		if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "speculative decoding ("+c.spec.Mode) || !strings.Contains(text.String(), "forward passes") {
			t.Errorf("%s: text: %v\n%s", c.name, err, text.String())
		}
		if err := r.WriteHTML(&page); err != nil || !strings.Contains(page.String(), "Speculative decoding ("+c.spec.Mode+")") {
			t.Errorf("%s: html: %v", c.name, err)
		}
		b, _ := json.Marshal(r)
		var back struct {
			Speculation *explain.Speculation `json:"speculation"`
		}
		if err := json.Unmarshal(b, &back); err != nil || back.Speculation == nil || len(back.Speculation.Steps) != len(sp.Steps) {
			t.Errorf("%s: JSON: %v", c.name, err)
		}
		if c.spec.Mode == engine.SpecNgram && sp.Accepted == sp.Drafted {
			t.Logf("ngram at T=%v: every one of %d drafts accepted", c.temp, sp.Drafted)
		}
	}
}

func idsOf(ts []explain.Token) []int32 {
	out := make([]int32, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}
