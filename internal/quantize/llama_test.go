package quantize_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/quantize"
	"github.com/loom-inference/loom/internal/testmodels"
)

var (
	flagModels = flag.String("quantize.models", "tiny-test", "synthgguf presets to quantize (comma-separated)")
	flagTypes  = flag.String("quantize.types", "", "mixes to check (default: all)")
	flagSrc    = flag.String("quantize.sources", "F32,F16", "input types (comma-separated)")
)

// llamaQuantize runs llama-quantize once per input and type, caching the
// output beside the inputs; it returns the path and the seconds it took
// (0 when cached).
func llamaQuantize(t *testing.T, in, typ string) (string, float64) {
	cache, err := testmodels.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(cache, "llamaquant-"+strings.TrimSuffix(filepath.Base(in), ".gguf")+"-"+typ+".gguf")
	if _, err := os.Stat(out); err == nil {
		return out, 0
	}
	tool, env := testmodels.LlamaTool(t, "llama-quantize")
	tmp := out + fmt.Sprintf(".tmp%d", os.Getpid())
	cmd := exec.Command(tool, in, tmp, typ, "2")
	cmd.Env = env
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Fatalf("llama-quantize %s %s: %v\n%s", in, typ, err, b)
	}
	secs := time.Since(start).Seconds()
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	return out, secs
}

// TestMatchesLlamaQuantize: for every mix, Loom's output has the tensor
// types and bytes of llama-quantize's (b4748) for the same F32 and F16
// synthgguf inputs. Quantize times are logged side by side.
func TestMatchesLlamaQuantize(t *testing.T) {
	types := quantize.Names()
	if *flagTypes != "" {
		types = strings.Split(*flagTypes, ",")
	}
	for _, preset := range strings.Split(*flagModels, ",") {
		for _, src := range strings.Split(*flagSrc, ",") {
			in := testmodels.Synth(t, "-model", preset, "-type", src, "-seed", "1")
			for _, typ := range types {
				if typ == src || typ == "MXFP4_MOE" { // b4748 predates MXFP4: TestMXFP4MoE
					continue
				}
				t.Run(preset+"-"+src+"-"+typ, func(t *testing.T) {
					ref, refSecs := llamaQuantize(t, in, typ)
					compareQuantized(t, in, ref, typ, refSecs)
				})
			}
		}
	}
}

func compareQuantized(t *testing.T, in, ref, typ string, refSecs float64) {
	ft, err := quantize.ParseFType(typ)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	start := time.Now()
	if _, err := quantize.Run(f, &buf, ft, quantize.Options{Threads: 2}); err != nil {
		t.Fatal(err)
	}
	secs := time.Since(start).Seconds()
	ours, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want, err := gguf.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	if len(ours.Tensors) != len(want.Tensors) {
		t.Fatalf("%d tensors, llama-quantize %d", len(ours.Tensors), len(want.Tensors))
	}
	bad := 0
	for i, w := range want.Tensors {
		o := ours.Tensors[i]
		if o.Name != w.Name {
			t.Fatalf("tensor %d is %s, llama-quantize's %s (order)", i, o.Name, w.Name)
		}
		if o.Type != w.Type {
			t.Errorf("%s: type %s, llama-quantize %s", w.Name, o.Type, w.Type)
			bad++
			continue
		}
		a, b := ours.TensorData(&ours.Tensors[i]), want.TensorData(&want.Tensors[i])
		if !bytes.Equal(a, b) {
			j := 0
			for j < len(a) && j < len(b) && a[j] == b[j] {
				j++
			}
			bs := w.Type.Traits().TypeSize
			t.Errorf("%s (%s): bytes differ from byte %d (block %d of %d bytes)", w.Name, w.Type, j, j/bs, bs)
			bad++
		}
		if bad > 5 {
			t.FailNow()
		}
	}
	if ft, _ := ours.Uint("general.file_type"); ft != 0 {
		if wft, _ := want.Uint("general.file_type"); wft != ft {
			t.Errorf("general.file_type %d, llama-quantize %d", ft, wft)
		}
	}
	if refSecs > 0 {
		t.Logf("QUANTIZE %s → %s: Loom %.2f s, llama-quantize %.2f s (2 threads each)", filepath.Base(in), typ, secs, refSecs)
	}
}
