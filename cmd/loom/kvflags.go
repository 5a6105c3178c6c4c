package main

import (
	"flag"

	"github.com/loom-inference/loom/engine"
)

// cacheFlags are llama.cpp's memory and long-context flags: the KV
// cache's types (--cache-type-k/-ctk, --cache-type-v/-ctv), flash
// attention (-fa), context shift (--context-shift, --keep) and where the
// weights are read from (--mmap).
type cacheFlags struct {
	k, v  string
	fa    bool
	shift bool
	keep  int
	mmap  bool
}

func addCacheFlags(fs *flag.FlagSet) *cacheFlags {
	c := &cacheFlags{}
	const types = "f16 (default), bf16, f32, q8_0 or q4_0"
	fs.StringVar(&c.k, "cache-type-k", "", "KV cache `TYPE` of the keys: "+types+" (q8_0 halves the cache, q4_0 takes 28%)")
	fs.StringVar(&c.k, "ctk", "", "same as --cache-type-k `TYPE`")
	fs.StringVar(&c.v, "cache-type-v", "", "KV cache `TYPE` of the values: "+types)
	fs.StringVar(&c.v, "ctv", "", "same as --cache-type-v `TYPE`")
	fs.BoolVar(&c.fa, "flash-attn", false, "tiled attention with an online softmax over the cache's blocks for an F16 cache too (other cache types always use it); off, F16 attention is llama.cpp's non-flash computation bit for bit")
	fs.BoolVar(&c.fa, "fa", false, "same as --flash-attn")
	fs.BoolVar(&c.shift, "context-shift", false, "when a sequence fills its context, drop the oldest half of its positions after --keep and go on (keys re-rotated), instead of ending; loom chat also drops the oldest turns of a conversation that outgrew the context")
	fs.IntVar(&c.keep, "keep", 0, "with --context-shift: the first `N` positions are never dropped (the BOS token always stays)")
	fs.BoolVar(&c.mmap, "mmap", false, "read the weights from the model file's mapping, shared with the page cache and other processes (llama.cpp's default; the matrices repacked at load for their kernels still get copies of their own); without it the matrices read whole every token and not repacked at load are copied into huge pages when memory allows, which decodes faster")
	return c
}

// apply sets the flags' options in o.
func (c *cacheFlags) apply(o engine.Options) engine.Options {
	o.CacheTypeK, o.CacheTypeV, o.FlashAttn, o.ContextShift, o.Keep = c.k, c.v, c.fa, c.shift, c.keep
	o.WeightsInPlace = c.mmap
	return o
}
