package quantize_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/quantize"
	"github.com/loom-inference/loom/internal/tensor"
	"github.com/loom-inference/loom/internal/testmodels"
)

// tensorDigest is the sha256 of every tensor's name, type, dims and bytes,
// in file order: what two quantizers must agree on, whatever order they
// write the metadata in.
func tensorDigest(f *gguf.File) string {
	h := sha256.New()
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		h.Write([]byte(ti.Name))
		binary.Write(h, binary.LittleEndian, uint32(ti.Type))
		for _, d := range ti.Dims {
			binary.Write(h, binary.LittleEndian, d)
		}
		h.Write(f.TensorData(ti))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestMXFP4MoE: the MXFP4_MOE mix of gptoss-mini is tensor for tensor
// what llama.cpp 2026 writes (llama_model_quantize of node-llama-cpp
// 3.22.1's libllama, LLAMA_FTYPE_MOSTLY_MXFP4_MOE, 2 threads): the
// digests were recorded from its output files. From the F16 file the
// MXFP4 experts are copied and the rest becomes Q8_0; from the F32 file
// of the dequantized F16 weights every expert is quantized again by
// quantize_row_mxfp4_ref's rules (and lands on the same bytes); the
// perturbed file's experts are floats off the MXFP4 grid, edge cases
// included.
func TestMXFP4MoE(t *testing.T) {
	synth := func(args ...string) func(t *testing.T) string {
		return func(t *testing.T) string { return testmodels.Synth(t, args...) }
	}
	for _, c := range []struct {
		name   string
		file   func(t *testing.T) string
		digest string
	}{
		{"F16", synth("-model", "gptoss-mini", "-type", "F16", "-seed", "1"), "ab47b29b50e80c87710a1679c0bae8c6c7b64db68115cae555f3a5227b71889e"},
		{"F32-dequant-F16", synth("-model", "gptoss-mini", "-type", "F32", "-dequant-of", "F16", "-seed", "1"), "ab47b29b50e80c87710a1679c0bae8c6c7b64db68115cae555f3a5227b71889e"},
		{"perturbed", func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "perturbed.gguf")
			if err := os.WriteFile(path, perturbedExperts(t), 0o644); err != nil {
				t.Fatal(err)
			}
			return path
		}, "3a9aac7b3780c7391ffb00e97f77f827fc13a4968022802528406c7e96f89a34"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := gguf.Open(c.file(t))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var buf bytes.Buffer
			res, err := quantize.Run(f, &buf, quantize.MXFP4_MOE, quantize.Options{Threads: 3})
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range res.Choices {
				want := ch.Type // 1-D tensors, biases and the router stay
				switch {
				case len(ch.Dims) == 3:
					want = tensor.MXFP4
				case ch.Type == tensor.F16 || ch.Type == tensor.F32 && strings.HasSuffix(ch.Name, "weight") && len(ch.Dims) == 2 && !strings.Contains(ch.Name, "ffn_gate_inp"):
					want = tensor.Q8_0
				}
				if ch.To != want {
					t.Errorf("%s %v: %s → %s, want %s", ch.Name, ch.Dims, ch.Type, ch.To, want)
				}
			}
			out, err := gguf.Parse(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if ft, _ := out.Uint("general.file_type"); ft != uint64(quantize.MXFP4_MOE) {
				t.Errorf("general.file_type %d", ft)
			}
			if got := tensorDigest(out); got != c.digest {
				t.Errorf("tensors digest %s, llama.cpp's %s", got, c.digest)
			}
		})
	}
}

// perturbedExperts writes gptoss-mini's F32 file (dequantized F16) with
// its expert weights moved off the MXFP4 grid (×1.37 plus Gaussian noise
// of a seeded PCG stream) and the first blocks of blk.0.ffn_up_exps
// replaced by edge cases of quantize_row_mxfp4_ref: zeros, −0, ties at
// every midpoint, amax around the log2f rounding thresholds, subnormals,
// tiny blocks whose exponent wraps, values near FLT_MAX. (Not Inf or NaN,
// nor an amax in [2^−126, 2^−125), whose exponent wraps to 255: llama.cpp
// refuses those inputs and outputs, internal/quant's tests cover them.)
func perturbedExperts(t *testing.T) []byte {
	f, err := gguf.Open(testmodels.Synth(t, "-model", "gptoss-mini", "-type", "F32", "-dequant-of", "F16", "-seed", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	w.Alignment = f.Alignment
	for _, kv := range f.KVs {
		w.Set(kv.Key, kv.Value)
	}
	rng := rand.New(rand.NewPCG(38, 39))
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data := f.TensorData(ti)
		if len(ti.Dims) == 3 {
			x := make([]float32, len(data)/4)
			for j := range x {
				v := math.Float32frombits(binary.LittleEndian.Uint32(data[4*j:]))
				x[j] = float32(v*1.37) + float32(rng.NormFloat64()*0.003)
			}
			if ti.Name == "blk.0.ffn_up_exps.weight" {
				copy(x, mxfp4EdgeBlocks())
			}
			data = make([]byte, len(data))
			for j, v := range x {
				binary.LittleEndian.PutUint32(data[4*j:], math.Float32bits(v))
			}
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, data); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// mxfp4EdgeBlocks: whole 32-value blocks of edge cases.
func mxfp4EdgeBlocks() []float32 {
	negz := float32(math.Copysign(0, -1))
	var out []float32
	block := func(vals ...float32) {
		b := make([]float32, 32)
		for i := range b {
			b[i] = vals[i%len(vals)]
		}
		out = append(out, b...)
	}
	block(0)
	block(negz, 0)
	// d = 2^-3 (amax 1.5): the codes, their midpoints and the floats around them, both signs
	for _, m := range []float32{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 10, 12} {
		v := m / 8
		block(1.5, v, -v, math.Nextafter32(v, 0), math.Nextafter32(v, 2), -math.Nextafter32(v, 2))
	}
	for _, k := range []int{-140, -133, -132, -128, -125, -124, -10, -3, -1, 0, 1, 2, 10, 126, 127} {
		top := float32(math.Ldexp(1, k+1))
		if k == 127 {
			top = math.MaxFloat32
		}
		for _, a := range []float32{math.Nextafter32(top, 0), float32(math.Ldexp(1, k)), math.Nextafter32(math.Nextafter32(top, 0), 0)} {
			block(a, a/3, -a/2, a/7, -a)
		}
	}
	block(math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 0)
	block(math.MaxFloat32, -math.MaxFloat32, 1, 1e38, -3e37)
	block(3e38, 1e-39, 12, -5e37)
	return out
}
