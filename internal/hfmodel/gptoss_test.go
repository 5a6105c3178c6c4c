package hfmodel

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
	"github.com/loom-inference/loom/safetensors"
)

// gpt-oss's layout as released, written from a GGUF file for the round
// trip (the inverse of gptossExperts), and unit tests of the repacking.

// gptossHF are gpt-oss's Hugging Face names for the GGUF names outside
// the experts (after the block prefix).
var gptossHF = map[string]string{
	"attn_norm.weight": "input_layernorm.weight", "post_attention_norm.weight": "post_attention_layernorm.weight",
	"attn_q.weight": "self_attn.q_proj.weight", "attn_q.bias": "self_attn.q_proj.bias",
	"attn_k.weight": "self_attn.k_proj.weight", "attn_k.bias": "self_attn.k_proj.bias",
	"attn_v.weight": "self_attn.v_proj.weight", "attn_v.bias": "self_attn.v_proj.bias",
	"attn_output.weight": "self_attn.o_proj.weight", "attn_output.bias": "self_attn.o_proj.bias",
	"attn_sinks.weight": "self_attn.sinks", "ffn_gate_inp.weight": "mlp.router.weight", "ffn_gate_inp.bias": "mlp.router.bias",
	"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight", "output.weight": "lm_head.weight",
}

func gptossName(t *testing.T, gg string) string {
	prefix, rest := "", gg
	if r, ok := strings.CutPrefix(gg, "blk."); ok {
		i := strings.Index(r, ".")
		prefix, rest = "model.layers."+r[:i]+".", r[i+1:]
	}
	hf, ok := gptossHF[rest]
	if !ok {
		t.Fatalf("no gpt-oss name for %s", gg)
	}
	return prefix + hf
}

// unpackMXFP4 is repackMXFP4's inverse: ggml blocks (scale, then element
// j | element j+16 << 4) to the release's 16 bytes of element 2i | 2i+1
// << 4 and a scale apart.
func unpackMXFP4(data []byte) (blocks, scales []byte) {
	n := len(data) / 17
	blocks, scales = make([]byte, 16*n), make([]byte, n)
	for k := range n {
		b := data[17*k : 17*k+17]
		scales[k] = b[0]
		el := func(j int) byte {
			if j < 16 {
				return b[1+j] & 0xF
			}
			return b[1+j-16] >> 4
		}
		for i := range 16 {
			blocks[16*k+i] = el(2*i) | el(2*i+1)<<4
		}
	}
	return blocks, scales
}

// interleave puts the rows of a and b (each n rows of row bytes per
// expert) alternately: a's row r at 2r, b's at 2r+1.
func interleave(a, b []byte, experts, n int) []byte {
	row := len(a) / (experts * n)
	out := make([]byte, 0, 2*len(a))
	for r := range experts * n {
		out = append(out, a[r*row:(r+1)*row]...)
		out = append(out, b[r*row:(r+1)*row]...)
	}
	return out
}

func dequantized(t *testing.T, typ tensor.DType, data []byte) []byte {
	x := make([]float32, len(data)/typ.Traits().TypeSize*typ.Traits().BlockSize)
	if err := quant.Dequantize(typ, x, data); err != nil {
		t.Fatal(err)
	}
	return f32bytes(x)
}

func f32bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// gptossExpertTensors writes f's experts as gpt-oss's fused tensors: in
// MXFP4 blocks and scales, or (plain) as F32 [experts, inputs, outputs].
func gptossExpertTensors(t *testing.T, f *gguf.File, plain bool) []safetensors.Tensor {
	n, _ := f.Uint("gpt-oss.block_count")
	var ts []safetensors.Tensor
	for l := range int(n) {
		get := func(s string) (*gguf.TensorInfo, []byte) {
			ti, ok := f.Tensor(fmt.Sprintf("blk.%d.%s", l, s))
			if !ok {
				t.Fatalf("blk.%d.%s missing", l, s)
			}
			return ti, f.TensorData(ti)
		}
		p := fmt.Sprintf("model.layers.%d.mlp.experts.", l)
		gate, gd := get("ffn_gate_exps.weight")
		_, ud := get("ffn_up_exps.weight")
		down, dd := get("ffn_down_exps.weight")
		cols, ffn, e := int(gate.Dims[0]), int(gate.Dims[1]), int(gate.Dims[2])
		dim := int(down.Dims[1])
		if plain {
			g, u, d := dequantized(t, gate.Type, gd), dequantized(t, gate.Type, ud), dequantized(t, down.Type, dd)
			gu := make([]byte, len(g)+len(u)) // [e][h][2f+j]
			dn := make([]byte, len(d))        // [e][f][d]
			for x := range e {
				for f := range ffn {
					for h := range cols {
						src := 4 * ((x*ffn+f)*cols + h)
						dst := 4 * ((x*cols+h)*2*ffn + 2*f)
						copy(gu[dst:dst+4], g[src:src+4])
						copy(gu[dst+4:dst+8], u[src:src+4])
					}
				}
				for dd := range dim {
					for f := range ffn {
						src, dst := 4*((x*dim+dd)*ffn+f), 4*((x*ffn+f)*dim+dd)
						copy(dn[dst:dst+4], d[src:src+4])
					}
				}
			}
			ts = append(ts, safetensors.Tensor{Name: p + "gate_up_proj", DType: "F32", Shape: []int64{int64(e), int64(cols), int64(2 * ffn)}, Data: gu},
				safetensors.Tensor{Name: p + "down_proj", DType: "F32", Shape: []int64{int64(e), int64(ffn), int64(dim)}, Data: dn})
		} else {
			if gate.Type != tensor.MXFP4 || down.Type != tensor.MXFP4 {
				t.Fatalf("gpt-oss experts in %s, %s (MXFP4 expected)", gate.Type, down.Type)
			}
			nb := cols / 32
			gb, gs := unpackMXFP4(gd)
			ub, us := unpackMXFP4(ud)
			db, ds := unpackMXFP4(dd)
			ts = append(ts,
				safetensors.Tensor{Name: p + "gate_up_proj_blocks", DType: "U8", Shape: []int64{int64(e), int64(2 * ffn), int64(nb), 16}, Data: interleave(gb, ub, e, ffn)},
				safetensors.Tensor{Name: p + "gate_up_proj_scales", DType: "U8", Shape: []int64{int64(e), int64(2 * ffn), int64(nb)}, Data: interleave(gs, us, e, ffn)},
				safetensors.Tensor{Name: p + "down_proj_blocks", DType: "U8", Shape: []int64{int64(e), int64(dim), int64(down.Dims[0] / 32), 16}, Data: db},
				safetensors.Tensor{Name: p + "down_proj_scales", DType: "U8", Shape: []int64{int64(e), int64(dim), int64(down.Dims[0] / 32)}, Data: ds})
		}
		gbias, gbd := get("ffn_gate_exps.bias")
		_, ubd := get("ffn_up_exps.bias")
		dbias, dbd := get("ffn_down_exps.bias")
		dt := dtypeOf[gbias.Type]
		size := len(gbd) / int(gbias.Dims[0]*gbias.Dims[1])
		gu := make([]byte, 0, 2*len(gbd)) // [e][2f+j]
		for c := range len(gbd) / size {
			gu = append(gu, gbd[c*size:(c+1)*size]...)
			gu = append(gu, ubd[c*size:(c+1)*size]...)
		}
		ts = append(ts, safetensors.Tensor{Name: p + "gate_up_proj_bias", DType: dt, Shape: []int64{int64(e), int64(2 * gbias.Dims[0])}, Data: gu},
			safetensors.Tensor{Name: p + "down_proj_bias", DType: dtypeOf[dbias.Type], Shape: shapeOf(dbias.Dims), Data: dbd})
	}
	return ts
}

// TestRepackMXFP4: a block whose codes are their own positions (element
// i = i mod 16) repacks to ggml's order, and unpackMXFP4 undoes it.
func TestRepackMXFP4(t *testing.T) {
	src := make([]byte, 16) // element 2i low, 2i+1 high
	for i := range src {
		src[i] = byte(2*i%16) | byte((2*i+1)%16)<<4
	}
	blocks := &safetensors.Tensor{DType: "U8", Shape: []int64{1, 1, 1, 16}, Data: src}
	scales := &safetensors.Tensor{DType: "U8", Shape: []int64{1, 1, 1}, Data: []byte{130}}
	got, err := repackMXFP4(blocks, scales)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{130}
	for j := range 16 { // element j low, j+16 high; element k is k mod 16
		want = append(want, byte(j)|byte(j)<<4)
	}
	if !slices.Equal(got.Data, want) || got.Type != tensor.MXFP4 || !slices.Equal(got.Dims, []uint64{32, 1, 1}) {
		t.Fatalf("%v %s %v, want %v", got.Data, got.Type, got.Dims, want)
	}
	b, s := unpackMXFP4(got.Data)
	if !slices.Equal(b, src) || !slices.Equal(s, []byte{130}) {
		t.Fatalf("unpacked %v %v", b, s)
	}
	for _, c := range []struct {
		b, s *safetensors.Tensor
		want string
	}{
		{&safetensors.Tensor{DType: "F16", Shape: []int64{1, 1, 1, 16}}, scales, "U8 expected"},
		{&safetensors.Tensor{DType: "U8", Shape: []int64{1, 1, 32}}, scales, "want [experts, rows, blocks, 16]"},
		{blocks, &safetensors.Tensor{DType: "U8", Shape: []int64{1, 2, 1}}, "MXFP4 scales of shape [1 2 1]"},
	} {
		if _, err := repackMXFP4(c.b, c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.b.Shape, err, c.want)
		}
	}
}
