package hfmodel

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/tokenizer"
)

// specialVocab is gguf-py's SpecialVocab (vocab.py) as the converter runs
// it for the families of embed.go: special token ids from
// tokenizer_config.json (looked up among tokenizer.json's added tokens)
// then config.json, add_bos/add_eos/add_sep from the post-processor's
// template and tokenizer_config.json, the chat template, and the
// normalizer's lowercase / strip_accents flags. It writes them to w in the
// converter's order and returns what the engine needs of them.
func specialVocab(dir string, tj *tokenizer.HFFile, fromJSON bool, h hparams, nVocab int, w *gguf.Writer) (Special, error) {
	sp := Special{BOS: -1, EOS: -1, UNK: -1, PAD: -1}
	var tc map[string]any
	if err := readJSON(filepath.Join(dir, "tokenizer_config.json"), 64<<20, &tc); err != nil && !os.IsNotExist(err) {
		return sp, fmt.Errorf("tokenizer: %w", err)
	}
	types := []string{"bos", "eos", "unk", "sep", "pad", "cls", "mask"}
	var idOrder []string
	ids := map[string]int{}
	var addOrder []string
	adds := map[string]bool{}
	setAdd := func(typ string, v bool) {
		if _, ok := adds[typ]; !ok {
			addOrder = append(addOrder, typ)
		}
		adds[typ] = v
	}
	setID := func(typ string, v any) error {
		x, ok := v.(float64)
		if !ok || x != math.Trunc(x) {
			return nil // not an int: ignored
		}
		if x < 0 {
			return fmt.Errorf("invalid value for special token type %s: %s", typ, numStr(x))
		}
		if x < float64(nVocab) {
			if _, set := ids[typ]; !set {
				ids[typ], idOrder = int(x), append(idOrder, typ)
			}
		}
		return nil
	}
	// added is the id of the added token whose content is s (nil: none).
	added := func(s string) any {
		if !fromJSON {
			return nil
		}
		if id, ok := tj.Vocab[s]; ok {
			if _, isAdded := tj.Added[id]; isAdded {
				return float64(id)
			}
		}
		return nil
	}
	tcSet := len(tc) > 0
	put := func(k string, v any) {
		if tcSet {
			tc[k] = v
		}
	}
	str := func(v any) string { s, _ := v.(string); return s }
	in := func(s string, vs ...any) bool {
		return s != "" && slices.ContainsFunc(vs, func(v any) bool { return str(v) == s })
	}
	var lower, strip *bool
	if fromJSON {
		lower, strip = tj.NormalizerFlags()
		bos, cls, eos, sep := tc["bos_token"], tc["cls_token"], tc["eos_token"], tc["sep_token"]
		if !truthy(bos) && truthy(cls) && tcSet {
			tc["bos_token"], bos = cls, cls
		}
		if !truthy(eos) && truthy(sep) && tcSet {
			tc["eos_token"], eos = sep, sep
		}
		for _, p := range tj.PostProcessors() {
			switch p.Type {
			case "RobertaProcessing":
				setAdd("bos", true)
				setAdd("eos", true)
				setAdd("sep", true)
				if !truthy(cls) && tcSet {
					c := any(p.Cls)
					if p.Cls == "" {
						c = bos
					}
					cls = c
					put("cls_token", c)
				}
				if !truthy(sep) && tcSet {
					s := any(p.Sep)
					if p.Sep == "" {
						s = eos
					}
					sep = s
					put("sep_token", s)
				}
			case "TemplateProcessing":
				special := func(item string) string {
					if len(item) > 0 && item[0] == '$' {
						return ""
					}
					return item
				}
				var first, last string
				if len(p.Single) > 1 {
					if first = special(p.Single[0]); first != "" {
						switch {
						case !tcSet:
							bos = first
						case !in(first, bos, cls):
							if !truthy(bos) {
								tc["bos_token"], bos = first, first
							}
							if !truthy(cls) {
								tc["cls_token"], cls = first, first
							}
						}
						setAdd("bos", in(first, bos, cls))
					}
					if last = special(p.Single[len(p.Single)-1]); last != "" {
						switch {
						case !tcSet:
							eos = last
						case last != str(eos):
							if !slices.Contains(types, "eot") {
								types = append(types, "eot")
								tc["eot_token"] = eos
							} else if !slices.Contains(types, "eom") {
								types = append(types, "eom")
								tc["eom_token"] = eos
							}
							tc["eos_token"], eos = last, last
						}
						setAdd("eos", last == str(eos))
					}
				}
				if pair := p.Pair; len(pair) > 0 {
					lo, hi := 0, len(pair)
					if first != "" && special(pair[0]) == first {
						lo = 1
					}
					if last != "" && special(pair[len(pair)-1]) == last {
						hi--
					}
					if lo < hi {
						sub := pair[lo:hi]
						if sub[0] == "$A" && sub[len(sub)-1] == "$B" && len(sub) > 2 {
							mid := sub[1 : len(sub)-1]
							addSep := false
							if e := special(mid[0]); e != "" && in(e, sep, eos) && last == "" {
								addSep = true
							}
							if len(mid) == 2 {
								if e := special(mid[1]); e != "" && in(e, sep, eos) {
									addSep = true
								}
							}
							setAdd("sep", addSep)
							if addSep && !truthy(sep) {
								put("sep_token", eos)
							}
						}
					}
				}
			}
		}
	}
	if tcSet {
		for _, typ := range types {
			if v, ok := tc["add_"+typ+"_token"].(bool); ok {
				setAdd(typ, v)
			}
			var content string
			switch e := tc[typ+"_token"].(type) {
			case string:
				content = e
			case map[string]any:
				c, ok := e["content"].(string)
				if !ok {
					continue
				}
				content = c
			default:
				continue
			}
			if err := setID(typ, added(content)); err != nil {
				return sp, err
			}
		}
		switch ct := tc["chat_template"].(type) {
		case string:
			sp.ChatTemplate = ct
		case []any:
			var named []struct{ Name, Template string }
			if b, err := json.Marshal(ct); err == nil && json.Unmarshal(b, &named) == nil {
				for _, n := range named {
					if n.Name == "default" {
						sp.ChatTemplate = n.Template
					}
				}
			}
		case nil:
			if b, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
				sp.ChatTemplate = string(b)
			}
		}
	}
	// config.json's ids (the top level, then text_config)
	for _, typ := range types {
		v := h[typ+"_token_id"]
		if v == nil {
			if t, ok := h["text_config"].(map[string]any); ok {
				v = t[typ+"_token_id"]
			}
		}
		if err := setID(typ, v); err != nil {
			return sp, err
		}
	}
	idKey := map[string]string{"bos": "bos_token_id", "eos": "eos_token_id", "unk": "unknown_token_id", "sep": "seperator_token_id",
		"pad": "padding_token_id", "mask": "mask_token_id", "eot": "eot_token_id", "eom": "eom_token_id"}
	for _, typ := range idOrder {
		if k, ok := idKey[typ]; ok { // cls has no writer: the converter skips it
			w.Set("tokenizer.ggml."+k, uint32(ids[typ]))
		}
	}
	for _, typ := range addOrder {
		switch typ {
		case "bos", "eos", "sep":
			w.Set("tokenizer.ggml.add_"+typ+"_token", adds[typ])
		}
	}
	if sp.ChatTemplate != "" {
		w.Set("tokenizer.chat_template", sp.ChatTemplate)
	}
	if lower != nil {
		w.Set("tokenizer.ggml.normalizer.lowercase", *lower)
	}
	if strip != nil {
		w.Set("tokenizer.ggml.normalizer.strip_accents", *strip)
	}
	get := func(typ string) int32 {
		if id, ok := ids[typ]; ok {
			return int32(id)
		}
		return -1
	}
	sp.BOS, sp.EOS, sp.UNK, sp.PAD = get("bos"), get("eos"), get("unk"), get("pad")
	for _, a := range []struct {
		typ string
		dst **bool
	}{{"bos", &sp.AddBOS}, {"eos", &sp.AddEOS}} {
		if v, ok := adds[a.typ]; ok {
			*a.dst = &v
		}
	}
	return sp, nil
}
