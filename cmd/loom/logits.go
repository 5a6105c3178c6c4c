package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/loom-inference/loom/engine"
)

// cmdLogits prints, in the format of shared/reference, the prompt's tokens
// and the top logits after every position of one batched evaluation.
func cmdLogits(args []string) error {
	fs := flag.NewFlagSet("logits", flag.ContinueOnError)
	quantizeTo := fs.String("quantize", "", "for a Hugging Face folder: quantize the weights while loading (Q8_0, Q4_K_M, …, as llama-quantize)")
	model, threads, tok := loadFlags(fs)
	prompt := fs.String("p", "", "prompt (tokenized with BOS per metadata, special tokens not parsed)")
	idsFlag := fs.String("ids", "", "token ids, space-separated, used as given")
	top := fs.Int("top", 10, "logits per position")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" {
		return errors.New("-m FILE is required")
	}
	promptSet := false
	fs.Visit(func(f *flag.Flag) { promptSet = promptSet || f.Name == "p" })
	if promptSet == (*idsFlag != "") {
		return errors.New("give exactly one of -p PROMPT and --ids")
	}
	path, err := resolveModel(*model)
	if err != nil {
		return err
	}
	e, err := engine.Load(path, engine.Options{Quantize: *quantizeTo, Threads: *threads, Tokenizer: *tok})
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
	rows, err := e.Logits(ids)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, `{"kind":"prompt","n_vocab":%d,"tokens":[%s]}`+"\n", e.Info().NVocab, joinIDs(ids, ","))
	for i, row := range rows {
		var sb strings.Builder
		for j, s := range engine.TopK(row, *top) {
			if j > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "[%d,%.6f]", s.ID, s.Logit)
		}
		fmt.Fprintf(w, `{"kind":"tf","pos":%d,"token":%d,"lse":%.6f,"top":[%s]}`+"\n", i, ids[i], engine.LogSumExp(row), sb.String())
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
