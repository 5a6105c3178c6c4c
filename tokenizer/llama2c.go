package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"
)

// FromLlama2C reads a llama2.c tokenizer.bin: int32 max_token_length, then
// per token a float32 score, an int32 length and the bytes. Its texts use a
// plain space where SentencePiece uses '▁'; they are converted so one SPM
// implementation serves both formats.
func FromLlama2C(path string, vocabSize int) (*Vocab, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if vocabSize <= 0 || vocabSize > len(b)/8 {
		return nil, fmt.Errorf("tokenizer: %s: vocabulary size %d does not fit the %d-byte file", path, vocabSize, len(b))
	}
	off := 4
	v := &Vocab{Kind: SPM, BOS: 1, EOS: 2, UNK: 0, EOT: -1, PAD: -1, AddBOS: true, AddSpacePrefix: true}
	for i := range vocabSize {
		if off+8 > len(b) {
			return nil, fmt.Errorf("tokenizer: %s: truncated at token %d", path, i)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(b[off:]))
		n := int(int32(binary.LittleEndian.Uint32(b[off+4:])))
		off += 8
		if n < 0 || n > len(b)-off {
			return nil, fmt.Errorf("tokenizer: %s: token %d has length %d past the end", path, i, n)
		}
		text := string(b[off : off+n])
		off += n
		typ := Normal
		switch {
		case i == 0:
			typ, text = Unknown, "<unk>"
		case i == 1:
			typ, text = Control, "<s>"
		case i == 2:
			typ, text = Control, "</s>"
		case len(text) == 6 && strings.HasPrefix(text, "<0x") && text[5] == '>':
			typ = Byte
		default:
			text = escapeSpaces(text)
		}
		v.Tokens = append(v.Tokens, text)
		v.Scores = append(v.Scores, score)
		v.Types = append(v.Types, typ)
	}
	if err := v.init(); err != nil {
		return nil, err
	}
	return v, nil
}
