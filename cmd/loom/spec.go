package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"

	"github.com/loom-inference/loom/engine"
)

// specFlags are the speculative decoding flags of run, chat, serve, bench
// and explain, named as llama.cpp's: -md/--model-draft, --draft-max
// (--draft, --draft-n), --draft-min (--draft-n-min), --draft-p-min, and
// Loom's --spec for the drafter.
type specFlags struct {
	fs         *flag.FlagSet
	draftModel string
	mode       string
	max, min   int
	pMin       float64
	draftFile  bool // --draft named the draft model, not a count
}

// Defaults of the flags: llama.cpp's (common_params_speculative), which
// are also the engine's.
const (
	defaultDraftMax  = 16
	defaultDraftPMin = 0.75
	maxDraft         = 64 // the engine's limit of drafts per step
)

func addSpecFlags(fs *flag.FlagSet) *specFlags {
	s := &specFlags{fs: fs, max: defaultDraftMax, pMin: defaultDraftPMin}
	fs.StringVar(&s.draftModel, "model-draft", "", "speculative decoding with a draft `MODEL`: a smaller model with the same vocabulary proposes tokens, the model verifies several per forward pass (the output is the same, token for token)")
	fs.StringVar(&s.draftModel, "md", "", "same as --model-draft `MODEL`")
	fs.StringVar(&s.mode, "spec", "", "speculative decoding's drafter: `MODE` off, ngram (continue a repeat of earlier text: no second model) or draft (the --model-draft model); default draft with --model-draft, else off")
	fs.IntVar(&s.max, "draft-max", defaultDraftMax, "speculative decoding: most tokens drafted per step, 0 to 64 (0: no drafting); fewer when the acceptance or the batch says they do not pay")
	fs.IntVar(&s.max, "draft-n", defaultDraftMax, "same as --draft-max")
	fs.Func("draft", "same as --draft-max `N`; --draft FILE is --model-draft FILE", func(v string) error {
		if n, err := strconv.Atoi(v); err == nil {
			s.max = n
			return nil
		}
		if v == "" {
			return fmt.Errorf("want a number of tokens or a draft model")
		}
		s.draftModel, s.draftFile = v, true
		return nil
	})
	fs.IntVar(&s.min, "draft-min", 0, "speculative decoding: fewest drafted tokens worth verifying (a shorter proposal is dropped)")
	fs.IntVar(&s.min, "draft-n-min", 0, "same as --draft-min")
	fs.Float64Var(&s.pMin, "draft-p-min", defaultDraftPMin, "draft model: stop drafting where its most likely token's probability is below `P` (0 to 1)")
	return s
}

// tuned names a tuning flag the command line gave (the first of them;
// "" when none).
func (s *specFlags) tuned() string {
	set := setFlags(s.fs)
	for _, name := range []string{"draft-max", "draft-n", "draft", "draft-min", "draft-n-min", "draft-p-min"} {
		if set[name] && !(name == "draft" && s.draftFile) {
			return "--" + name
		}
	}
	return ""
}

// params checks the flags and returns the draft model's path ("" without)
// and the engine's speculation. perRequest (serve) allows tuning flags
// with speculation off: a request may turn it on.
func (s *specFlags) params(perRequest bool) (string, engine.SpecParams, error) {
	var p engine.SpecParams
	switch s.mode {
	case "", engine.SpecOff, engine.SpecNgram, engine.SpecDraft:
	default:
		return "", p, fmt.Errorf("--spec %q: want off, ngram or draft", s.mode)
	}
	switch {
	case s.max < 0 || s.max > maxDraft:
		return "", p, fmt.Errorf("--draft-max %d: want 0 (no drafting) to %d tokens per step", s.max, maxDraft)
	case s.min < 0 || s.min > s.max:
		return "", p, fmt.Errorf("--draft-min %d: want 0 to --draft-max (%d)", s.min, s.max)
	case !(s.pMin >= 0 && s.pMin <= 1):
		return "", p, fmt.Errorf("--draft-p-min %v: want a probability from 0 to 1", s.pMin)
	}
	path := ""
	if s.draftModel != "" {
		var err error
		if path, err = resolveModel(s.draftModel); err != nil {
			return "", p, fmt.Errorf("--model-draft: %w", err)
		}
	}
	mode := s.mode
	if mode == "" {
		mode = engine.SpecOff
		if path != "" {
			mode = engine.SpecDraft
		}
	}
	if mode == engine.SpecDraft && path == "" {
		return "", p, fmt.Errorf("--spec draft needs a draft model: give -md/--model-draft FILE (or --spec ngram, which needs none)")
	}
	if s.max == 0 { // llama.cpp's --draft-max 0: nothing is drafted
		mode = engine.SpecOff
	}
	if name := s.tuned(); mode == engine.SpecOff && name != "" && !perRequest && s.max > 0 {
		return "", p, fmt.Errorf("%s: speculative decoding is off; give --spec ngram, or a draft model with --model-draft FILE", name)
	}
	if mode != engine.SpecDraft && !perRequest {
		path = "" // the draft model would never draft
	}
	if mode == engine.SpecOff && (!perRequest || s.max == 0) {
		return path, engine.SpecParams{Mode: engine.SpecOff}, nil
	}
	// Off with its tuning kept (serve): a request turning it on gets them.
	return path, specParams(mode, s.max, s.min, s.pMin), nil
}

// specParams makes the engine's parameters; p-min 0 (draft whatever the
// draft model's confidence) is the smallest positive probability, as the
// engine reads 0 as its default.
func specParams(mode string, max, min int, pMin float64) engine.SpecParams {
	pm := float32(pMin)
	if pm == 0 {
		pm = math.SmallestNonzeroFloat32
	}
	return engine.SpecParams{Mode: mode, Max: max, Min: min, PMin: pm}
}

// specText is a result's speculation summary for stats lines: "" when
// nothing was drafted.
func specText(r engine.Result) string {
	if r.Drafted == 0 {
		return ""
	}
	return fmt.Sprintf(" | drafts: %d of %d accepted (%.0f%%)", r.Accepted, r.Drafted, 100*float64(r.Accepted)/float64(r.Drafted))
}

// specName describes a speculation for headers: "off", "ngram (max 16)".
func specName(p engine.SpecParams, draft string) string {
	switch p.Mode {
	case "", engine.SpecOff:
		if draft != "" {
			return fmt.Sprintf("off (draft model %s for requests with speculative.mode \"draft\")", draft)
		}
		return "off"
	case engine.SpecDraft:
		pm := float64(p.PMin)
		if pm < 1e-30 {
			pm = 0
		}
		return fmt.Sprintf("draft model %s (max %d, min %d, p-min %g)", draft, p.Max, p.Min, pm)
	}
	return fmt.Sprintf("%s (max %d, min %d)", p.Mode, p.Max, p.Min)
}
