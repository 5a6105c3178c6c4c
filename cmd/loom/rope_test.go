package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
)

// TestRopeFlags: the RoPE flags parse into the engine's override under
// llama.cpp's names, --rope-scaling refuses other kinds, and every command
// that loads a model for generation or evaluation lists them in -h.
func TestRopeFlags(t *testing.T) {
	cases := []struct {
		args []string
		want engine.RopeOverride
		err  string
	}{
		{nil, engine.RopeOverride{}, ""},
		{[]string{"--rope-scaling", "yarn", "--rope-scale", "4", "--yarn-orig-ctx", "32768"}, engine.RopeOverride{Scaling: "yarn", Scale: 4, YarnOrigCtx: 32768}, ""},
		{[]string{"-rope-freq-base", "1e6", "-rope-freq-scale", "0.25", "-rope-scaling=none"}, engine.RopeOverride{Scaling: "none", FreqBase: 1e6, FreqScale: 0.25}, ""},
		{[]string{"--rope-scaling", "longrope"}, engine.RopeOverride{}, `"longrope": want none, linear or yarn`},
		{[]string{"--yarn-orig-ctx", "4k"}, engine.RopeOverride{}, "yarn-orig-ctx"},
	}
	for _, c := range cases {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		rf := addRopeFlags(fs)
		err := fs.Parse(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want one containing %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || rf.override() != c.want {
			t.Errorf("%v: %+v, %v; want %+v", c.args, rf.override(), err, c.want)
		}
	}
	for _, cmd := range []string{"run", "chat", "serve", "bench", "explain", "logits", "embed", "rerank"} {
		out, _, err := loom(t, cmd, "-h")
		if err != nil {
			t.Errorf("loom %s -h: %v", cmd, err)
		}
		for _, f := range []string{"-rope-scaling", "-rope-scale ", "-rope-freq-base", "-rope-freq-scale", "-yarn-orig-ctx"} {
			if !strings.Contains(out, f) {
				t.Errorf("loom %s -h does not list %s:\n%s", cmd, f, out)
			}
		}
	}
}
