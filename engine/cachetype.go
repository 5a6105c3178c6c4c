package engine

import (
	"fmt"
	"strings"

	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
)

// cacheTypes reads Options.CacheTypeK/V and checks them against every
// attention layer's head width (a quantized type's blocks must divide it,
// as llama.cpp requires).
func cacheTypes(c *model.Config, opts Options) (kvcache.Types, error) {
	k, err := kvcache.ParseType(opts.CacheTypeK)
	if err != nil {
		return kvcache.Types{}, fmt.Errorf("engine: --cache-type-k: %w", err)
	}
	v, err := kvcache.ParseType(opts.CacheTypeV)
	if err != nil {
		return kvcache.Types{}, fmt.Errorf("engine: --cache-type-v: %w", err)
	}
	t := kvcache.Types{K: k, V: v}
	for l := range c.NLayers {
		if c.Recurrent(l) {
			continue
		}
		if err := t.Check(c.HeadDimOf(l)); err != nil {
			return kvcache.Types{}, fmt.Errorf("engine: layer %d: %w", l, err)
		}
	}
	return t, nil
}

// typeNames names the cache's types as llama.cpp does: "f16", or "K/V"
// when they differ from the default.
func typeNames(t kvcache.Types) string {
	k, v := strings.ToLower(t.K.String()), strings.ToLower(t.V.String())
	if k == v {
		return k
	}
	return k + "/" + v
}
