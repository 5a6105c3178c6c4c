package quant

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/tensor"
)

// TestLayouts: every layout's fields lie inside its block, in the order
// ggml's struct declares them, and the sizes are gguf's.
func TestLayouts(t *testing.T) {
	for typ, l := range layouts {
		tr := typ.Traits()
		if l.Size != tr.TypeSize || l.Elems != tr.BlockSize {
			t.Errorf("%s: layout %d bytes / %d elements, gguf %d / %d", typ, l.Size, l.Elems, tr.TypeSize, tr.BlockSize)
		}
		for name, off := range map[string]int{"D": l.D, "M": l.M, "QH": l.QH, "QS": l.QS, "Scales": l.Scales, "Bsums": l.Bsums} {
			if off >= l.Size {
				t.Errorf("%s: field %s at %d, outside its %d-byte block", typ, name, off, l.Size)
			}
		}
		if l.QS < 0 || l.D < 0 {
			t.Errorf("%s: every block type has quants and a scale", typ)
		}
	}
}

// TestDecodersCoverTypes: every quantized weight type has a layout and
// exactly one decoder, so the dequantization, the dot reference, the order
// references and the packed formats all read one unpacking.
func TestDecodersCoverTypes(t *testing.T) {
	for _, typ := range Types() {
		if typ == tensor.F32 || typ == tensor.F16 || typ == tensor.BF16 {
			continue
		}
		if _, ok := layouts[typ]; !ok {
			t.Errorf("%s: no layout", typ)
		}
		if (Decode32(typ) == nil) == (DecodeK(typ) == nil) {
			t.Errorf("%s: want exactly one block decoder", typ)
		}
	}
}

// literalAllowed lists the integer literals in the scanned packages that
// equal a block size by coincidence, by file and the line's text.
var literalAllowed = []struct{ file, line string }{
	{"kweights.go", "nstep := 15, float32(-1), float32(0.1), 20"}, // ggml's make_qkx2_quants step count
	{"rules.go", "Q6_K   FType = 18"},                             // llama.cpp's file-type enum
	{"rules.go", "Q5_K_M FType = 17"},                             // llama.cpp's file-type enum
}

// TestNoLayoutLiterals fails on a block's byte size written as a number
// (x[i*34:], nb*292) in quant, kernels or quantize outside layout.go: block
// sizes and field offsets are read from the layout table. Shift counts,
// composite-literal tables (codebooks) and the allow-list above are not
// block sizes. Assembly (.s) reads its offsets from the Go wrappers'
// bounds checks and is not scanned.
func TestNoLayoutLiterals(t *testing.T) {
	sizes := map[int64]bool{}
	for typ := range layouts {
		sizes[int64(typ.Traits().TypeSize)] = true
	}
	for _, dir := range []string{".", "../kernels", "../quantize"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			name := filepath.Base(path)
			if strings.HasSuffix(name, "_test.go") || name == "layout.go" || strings.HasPrefix(name, "gen_") {
				continue
			}
			for _, bad := range sizeLiterals(t, path, sizes) {
				t.Errorf("%s", bad)
			}
		}
	}
}

func sizeLiterals(t *testing.T, path string, sizes map[int64]bool) []string {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	skip := map[ast.Node]bool{}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			return false // tables of values (codebooks), not layouts
		case *ast.BinaryExpr:
			if n.Op == token.SHL || n.Op == token.SHR {
				skip[n.Y] = true
			}
		case *ast.UnaryExpr:
			if n.Op == token.SUB {
				skip[n.X] = true
			}
		case *ast.BasicLit:
			if n.Kind != token.INT || skip[n] {
				return true
			}
			v, err := strconv.ParseInt(n.Value, 0, 64)
			if err != nil || !sizes[v] {
				return true
			}
			pos := fset.Position(n.Pos())
			line := lines[pos.Line-1]
			for _, a := range literalAllowed {
				if a.file == filepath.Base(path) && strings.Contains(line, a.line) {
					return true
				}
			}
			out = append(out, fmt.Sprintf("%s:%d: %s is a block size: read it from quant.LayoutOf (%s)", path, pos.Line, n.Value, strings.TrimSpace(line)))
		}
		return true
	})
	return out
}
