package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/sample"
)

// cmdLogits prints, in the format of shared/reference, the prompt's tokens
// and the top logits after every position of one batched evaluation.
func cmdLogits(args []string) error {
	fs := newFlags("logits")
	quantizeTo := fs.String("quantize", "", "for a Hugging Face folder: quantize the weights while loading (Q8_0, Q4_K_M, …, as llama-quantize)")
	lora := addLoRAFlags(fs)
	rf := addRopeFlags(fs)
	kvf := addCacheFlags(fs)
	model, threads, tok := loadFlags(fs)
	prompt := fs.String("p", "", "prompt (tokenized with BOS per metadata, special tokens not parsed)")
	idsFlag := fs.String("ids", "", "token ids, space-separated, used as given")
	top := fs.Int("top", 10, "logits per position")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	text, err := modelAndText(model, pos)
	if err != nil {
		return err
	}
	set := setFlags(fs)
	switch words := strings.Join(text, " "); {
	case len(text) > 0 && set["p"]:
		return bothPrompts("-p", words)
	case len(text) > 0 && set["ids"]:
		return fmt.Errorf("unexpected argument %q: the prompt is given by --ids", text[0])
	case len(text) > 0:
		*prompt, set["p"] = words, true
	}
	if set["p"] == set["ids"] {
		return errors.New("give exactly one of a prompt (arguments or -p) and --ids")
	}
	if *top < 1 {
		return fmt.Errorf("--top %d: want 1 or more logits per position", *top)
	}
	if err := checkThreads("-t", *threads); err != nil {
		return err
	}
	if err := checkTokenizer(*tok, *model); err != nil {
		return err
	}
	path, err := resolveModel(*model)
	if err != nil {
		return err
	}
	// StepTokens: the whole prompt in one forward pass, one batch.
	e, err := engine.Load(path, kvf.apply(engine.Options{Quantize: *quantizeTo, Threads: *threads, Tokenizer: *tok, StepTokens: 1 << 20, LoRA: lora.adapters(), Rope: rf.override()}))
	if err != nil {
		return err
	}
	defer e.Close()
	var ids []int32
	if *idsFlag != "" {
		for _, f := range strings.Fields(*idsFlag) {
			v, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				return fmt.Errorf("--ids: %q is not a token id", f)
			}
			ids = append(ids, int32(v))
		}
	} else {
		ids = e.Tokenize(*prompt, true, false)
	}
	rows, err := e.Logits(context.Background(), ids)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, `{"kind":"prompt","n_vocab":%d,"tokens":[%s]}`+"\n", e.Info().NVocab, joinIDs(ids, ","))
	for i, row := range rows {
		var sb strings.Builder
		for j, s := range sample.TopK(row, *top) {
			if j > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "[%d,%.6f]", s.ID, s.Logit)
		}
		fmt.Fprintf(w, `{"kind":"tf","pos":%d,"token":%d,"lse":%.6f,"top":[%s]}`+"\n", i, ids[i], sample.LogSumExp(row), sb.String())
	}
	return nil
}

func joinIDs(ids []int32, sep string) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, sep)
}
