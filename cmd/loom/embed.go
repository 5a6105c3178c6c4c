package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-inference/loom/engine"
)

const embedRule = modelRule + `

With -m, every argument is one input; without it, the first argument is
the model and each further argument one input. -f FILE reads one input per
line (blank lines skipped); "-" (an argument, or -f -) reads standard
input the same way, as does piped standard input when no input is given.
Each input's embedding is printed on one line: its values separated by
spaces (a model without pooling: one line per token, a blank line after
each input), or with --json a JSON array of OpenAI's embedding objects.
"--" ends the flags.`

const rerankRule = modelRule + `

With -m, every argument is one document; without it, the first argument
is the model and each further argument one document. -f FILE reads one
document per line (blank lines skipped; - is standard input). The model
must be a reranker (pooling rank: bge-reranker, Qwen3-Reranker, …). Each
document is printed as SCORE<TAB>INDEX<TAB>DOCUMENT (tabs and line breaks
in it printed as spaces), the most relevant first; INDEX counts from 0 in
the order given. --json prints llama.cpp's results array instead. "--"
ends the flags.`

// embedCommon are the flags embed and rerank share.
type embedCommon struct {
	model    *string
	threads  *int
	ctx      *int
	file     *string
	asJSON   *bool
	truncate *bool
	pooling  *string
	rope     *ropeFlags
}

func embedFlags(fs *flag.FlagSet) *embedCommon {
	return &embedCommon{
		model:    fs.String("m", "", "model: an embedding or reranking GGUF file or Hugging Face folder"),
		threads:  fs.Int("t", defaultThreads(), "threads"),
		ctx:      ctxFlags(fs),
		file:     fs.String("f", "", "read the inputs from `FILE`, one per line (- is standard input)"),
		asJSON:   fs.Bool("json", false, "print JSON"),
		truncate: fs.Bool("truncate", false, "cut an input longer than the context (default: refuse it)"),
		pooling:  fs.String("pooling", "", "pool as `KIND` says — none, mean, cls, last or rank — instead of as the model's file says (llama.cpp's --pooling; a text-generation model then embeds)"),
		rope:     addRopeFlags(fs),
	}
}

// inputs gathers the texts of the arguments, -f and standard input.
func (c *embedCommon) inputs(args []string, what string) ([]string, error) {
	var out []string
	stdin := false
	for _, a := range args {
		if a == "-" {
			stdin = true
			continue
		}
		out = append(out, a)
	}
	if *c.file == "-" {
		stdin = true
	} else if *c.file != "" {
		f, err := os.Open(*c.file)
		if err != nil {
			return nil, err
		}
		lines, err := readLines(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", *c.file, err)
		}
		out = append(out, lines...)
	}
	if stdin || len(out) == 0 && *c.file == "" && !isTerminal(os.Stdin) && stdinHasData() {
		lines, err := readLines(os.Stdin)
		if err != nil {
			return nil, fmt.Errorf("standard input: %w", err)
		}
		out = append(out, lines...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s: give them as arguments, with -f FILE, or on standard input", what)
	}
	for i, s := range out {
		if s == "" {
			return nil, fmt.Errorf("%s %d is empty", strings.TrimSuffix(what, "s"), i)
		}
	}
	return out, nil
}

// readLines reads the non-blank lines of r (a trailing \r dropped).
func readLines(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		l := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// load loads the model (kind: what the command needs of it).
func (c *embedCommon) load(cmd string) (*engine.Engine, error) {
	if err := checkCommon(*c.threads, *c.ctx, 0); err != nil {
		return nil, err
	}
	e, err := loadModel(*c.model, engine.Options{Threads: *c.threads, CtxLen: *c.ctx, Pooling: *c.pooling, Rope: c.rope.override()})
	if err != nil {
		return nil, err
	}
	p := e.Pooling()
	var msg string
	switch {
	case p == "":
		msg = "%s is a text-generation model, not an embedding or reranking model"
	case cmd == "embed" && p == engine.PoolingRank:
		msg = "%s is a reranking model (pooling rank): its outputs are relevance scores; use loom rerank"
	case cmd == "rerank" && p != engine.PoolingRank:
		msg = "%s is an embedding model without a ranking head (pooling " + p + "): it cannot rerank; use loom embed"
	default:
		return e, nil
	}
	e.Close()
	return nil, fmt.Errorf(msg, *c.model)
}

// parseNorm reads --normalize: a name, or llama.cpp's --embd-normalize
// number.
func parseNorm(s string) (engine.Norm, error) {
	switch strings.ToLower(s) {
	case "l2", "2", "euclidean":
		return engine.NormL2, nil
	case "none", "-1":
		return engine.NormNone, nil
	case "maxabs", "max-abs", "0":
		return engine.NormMaxAbs, nil
	case "taxicab", "l1", "1":
		return engine.NormTaxicab, nil
	}
	return 0, errors.New("want none, l2, maxabs or taxicab (or llama.cpp's -1, 2, 0, 1)")
}

// formatFloat prints a float32 as the shortest text that reads back to it.
func formatFloat(x float32) string { return strconv.FormatFloat(float64(x), 'g', -1, 32) }

func cmdEmbed(args []string) error {
	fs := newFlags("embed")
	c := embedFlags(fs)
	norm := engine.NormL2
	normFlag := func(v string) error {
		n, err := parseNorm(v)
		norm = n
		return err
	}
	fs.Func("normalize", "how each vector is normalized: l2 (default: unit length), none, maxabs (largest magnitude 32760, for int16) or taxicab (sum of magnitudes 1); llama.cpp's 2, -1, 0, 1 too", normFlag)
	fs.Func("embd-normalize", "same as --normalize (llama.cpp's name)", normFlag)
	dims := fs.Int("dimensions", 0, "keep the first `N` values of each vector, before normalizing (Matryoshka embeddings; 0: all)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	words, err := modelAndText(c.model, pos)
	if err != nil {
		return errors.New("no model: give an embedding model as the first argument or with -m")
	}
	if *dims < 0 {
		return fmt.Errorf("--dimensions %d: want 0 (all) or more", *dims)
	}
	texts, err := c.inputs(words, "inputs")
	if err != nil {
		return err
	}
	e, err := c.load("embed")
	if err != nil {
		return err
	}
	defer e.Close()
	if w := e.EmbedDim(); *dims > w {
		return fmt.Errorf("--dimensions %d: the model's embeddings have %d", *dims, w)
	}
	if !*c.truncate {
		for i, t := range texts {
			if n := len(e.EmbedTokens(t)); n > e.CtxLen() {
				return fmt.Errorf("input %d has %d tokens, more than the context of %d: shorten it, or give --truncate to cut it", i, n, e.CtxLen())
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	embs, err := e.EmbedTexts(ctx, texts, engine.EmbedOptions{Norm: norm, Truncate: *c.truncate, Dimensions: *dims})
	if err != nil {
		return err
	}
	for i, em := range embs {
		if em.Truncated {
			fmt.Fprintf(os.Stderr, "loom: warning: input %d was cut to the context (%d tokens)\n", i, em.Tokens)
		}
	}
	out := bufio.NewWriter(os.Stdout)
	if *c.asJSON {
		type item struct {
			Object    string `json:"object"`
			Index     int    `json:"index"`
			Embedding any    `json:"embedding"`
		}
		out.WriteString("[")
		for i, em := range embs {
			var v any = em.Vector
			if em.Vector == nil {
				v = em.PerToken
			}
			b, err := json.Marshal(item{"embedding", i, v})
			if err != nil {
				return err
			}
			if i > 0 {
				out.WriteString(",")
			}
			out.WriteString("\n")
			out.Write(b)
		}
		out.WriteString("\n]\n")
		return out.Flush()
	}
	line := func(v []float32) {
		for j, x := range v {
			if j > 0 {
				out.WriteByte(' ')
			}
			out.WriteString(formatFloat(x))
		}
		out.WriteByte('\n')
	}
	for _, em := range embs {
		if em.Vector == nil { // pooling none: one line per token
			for _, v := range em.PerToken {
				line(v)
			}
			out.WriteByte('\n')
			continue
		}
		line(em.Vector)
	}
	return out.Flush()
}

func cmdRerank(args []string) error {
	fs := newFlags("rerank")
	c := embedFlags(fs)
	query := fs.String("query", "", "the query the documents are ranked for")
	topN := fs.Int("top-n", 0, "print only the `N` most relevant documents (0: all)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	words, err := modelAndText(c.model, pos)
	if err != nil {
		return errors.New("no model: give a reranking model as the first argument or with -m")
	}
	if !setFlags(fs)["query"] {
		return errors.New("no query: give it with --query")
	}
	if *topN < 0 {
		return fmt.Errorf("--top-n %d: want 0 (all) or more", *topN)
	}
	docs, err := c.inputs(words, "documents")
	if err != nil {
		return err
	}
	e, err := c.load("rerank")
	if err != nil {
		return err
	}
	defer e.Close()
	if !*c.truncate {
		for i, d := range docs {
			if n := len(e.RerankTokens(*query, d)); n > e.CtxLen() {
				return fmt.Errorf("document %d with the query takes %d tokens, more than the context of %d: shorten it, or give --truncate to cut the document", i, n, e.CtxLen())
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ranked, err := e.Rerank(ctx, *query, docs, engine.RerankOptions{Truncate: *c.truncate})
	if err != nil {
		return err
	}
	slices.SortStableFunc(ranked, func(a, b engine.Ranked) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if *topN > 0 && *topN < len(ranked) {
		ranked = ranked[:*topN]
	}
	out := bufio.NewWriter(os.Stdout)
	if *c.asJSON {
		type doc struct {
			Text string `json:"text"`
		}
		type result struct {
			Index          int     `json:"index"`
			RelevanceScore float32 `json:"relevance_score"`
			Document       doc     `json:"document"`
		}
		res := make([]result, len(ranked))
		for i, r := range ranked {
			res[i] = result{r.Index, r.Score, doc{docs[r.Index]}}
		}
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		out.Write(b)
		out.WriteByte('\n')
		return out.Flush()
	}
	flat := strings.NewReplacer("\t", " ", "\r\n", " ", "\n", " ", "\r", " ")
	for _, r := range ranked {
		fmt.Fprintf(out, "%s\t%d\t%s\n", formatFloat(r.Score), r.Index, flat.Replace(docs[r.Index]))
	}
	return out.Flush()
}
