package testmodels

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
)

// LoRAOptions describe a random LoRA adapter for a base model, the file
// llama.cpp's convert_lora_to_gguf.py would write for a PEFT adapter of
// that rank and alpha on the weights Targets matches.
type LoRAOptions struct {
	Rank    int
	Alpha   float32
	Seed    uint64
	Type    string // F32 or F16 (lora_a and lora_b)
	Targets string // regexp of the adapted weights' names
	// Std is the standard deviation of B's values (A's are
	// N(0, 1/√in), PEFT's Kaiming-like scale); 0: 0.02.
	Std float64
}

// ParseLoRASource reads "loragen -rank R -alpha A -seed S -type T -targets RE".
func ParseLoRASource(source string) (LoRAOptions, error) {
	f := strings.Fields(source)
	o := LoRAOptions{Type: "F32"}
	if len(f) == 0 || f[0] != "loragen" || len(f)%2 != 1 {
		return o, fmt.Errorf("not a loragen command: %q", source)
	}
	for i := 1; i+1 < len(f); i += 2 {
		v := f[i+1]
		var err error
		switch f[i] {
		case "-rank":
			o.Rank, err = strconv.Atoi(v)
		case "-alpha":
			var a float64
			a, err = strconv.ParseFloat(v, 32)
			o.Alpha = float32(a)
		case "-seed":
			o.Seed, err = strconv.ParseUint(v, 10, 64)
		case "-type":
			o.Type = v
		case "-targets":
			o.Targets = v
		case "-std":
			o.Std, err = strconv.ParseFloat(v, 64)
		default:
			err = fmt.Errorf("unknown flag %s", f[i])
		}
		if err != nil {
			return o, fmt.Errorf("%q: %w", source, err)
		}
	}
	return o, nil
}

// WriteLoRA writes a random adapter of o for the base model file base:
// general.type "adapter", adapter.type "lora", adapter.lora.alpha, and for
// each 2-D weight whose name matches o.Targets a pair W.lora_a [in, rank]
// and W.lora_b [rank, out], deterministic in o.Seed and the weight's name.
func WriteLoRA(w io.Writer, base *gguf.File, o LoRAOptions) error {
	if o.Rank <= 0 {
		return fmt.Errorf("loragen: rank %d", o.Rank)
	}
	re, err := regexp.Compile(o.Targets)
	if err != nil {
		return fmt.Errorf("loragen: targets: %w", err)
	}
	typ := map[string]gguf.Type{"F32": gguf.F32, "F16": gguf.F16}[o.Type]
	if o.Type != "F32" && typ == 0 {
		return fmt.Errorf("loragen: type %q (want F32 or F16)", o.Type)
	}
	arch, _ := base.String("general.architecture")
	gw := gguf.NewWriter()
	gw.Set("general.architecture", arch)
	gw.Set("general.type", "adapter")
	gw.Set("general.name", fmt.Sprintf("loragen rank %d seed %d", o.Rank, o.Seed))
	gw.Set("adapter.type", "lora")
	gw.Set("adapter.lora.alpha", o.Alpha)
	std := o.Std
	if std == 0 {
		std = 0.02
	}
	n := 0
	for _, t := range base.Tensors {
		if len(t.Dims) != 2 || !re.MatchString(t.Name) {
			continue
		}
		in, out := int(t.Dims[0]), int(t.Dims[1])
		r := rand.New(rand.NewPCG(o.Seed, nameHash(t.Name)))
		a := make([]float32, o.Rank*in) // [rank][in]
		sa := 1 / math.Sqrt(float64(in))
		for i := range a {
			a[i] = float32(gauss(r) * sa)
		}
		b := make([]float32, out*o.Rank) // [out][rank]
		for i := range b {
			b[i] = float32(gauss(r) * std)
		}
		if err := gw.AddTensor(t.Name+".lora_a", typ, []uint64{uint64(in), uint64(o.Rank)}, encode(typ, a)); err != nil {
			return err
		}
		if err := gw.AddTensor(t.Name+".lora_b", typ, []uint64{uint64(o.Rank), uint64(out)}, encode(typ, b)); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("loragen: no 2-D weight matches %q", o.Targets)
	}
	_, err = gw.WriteTo(w)
	return err
}

// LoRAModel returns the path of the adapter loragen source describes for
// the base model file base, written into the test cache on first use.
func LoRAModel(t testing.TB, base, source string) string {
	t.Helper()
	o, err := ParseLoRASource(source)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return cached(t, "loragen", func(w io.Writer) error { return WriteLoRA(w, f, o) })
}
