package model

import (
	"fmt"

	"github.com/loom-inference/loom/gguf"
)

// ReadSSM reads a hybrid model's recurrent geometry, the ssm.* keys
// (conv_kernel, inner_size, state_size, group_count, time_step_rank), each
// required and within its limit; the family checks how they relate.
func ReadSSM(f *gguf.File, c *Config) error {
	g := &c.SSM
	for _, p := range []struct {
		k   string
		v   *int
		lim uint64
	}{
		{"ssm.conv_kernel", &g.Conv, 64},
		{"ssm.inner_size", &g.Inner, MaxWidth},
		{"ssm.state_size", &g.State, 4096},
		{"ssm.group_count", &g.Groups, MaxHeads},
		{"ssm.time_step_rank", &g.DtRank, MaxHeads},
	} {
		k := c.Arch + "." + p.k
		v, err := f.UintOr(k, 0)
		if err != nil {
			return err
		}
		if v == 0 || v > p.lim {
			return fmt.Errorf("model: %s = %d is out of range (1 to %d)", k, v, p.lim)
		}
		*p.v = int(v)
	}
	return nil
}

// RecurrentByKVHeads marks as recurrent, with a state of elems values, the
// layers whose attention.head_count_kv entry is 0 (LFM2's and Granite
// 4.0-H's convention).
func RecurrentByKVHeads(c *Config, elems int) error {
	if elems <= 0 || elems > MaxStateElems {
		return fmt.Errorf("model: a recurrent layer's state of %d values is out of range (1 to %d)", elems, MaxStateElems)
	}
	c.StateElems = make([]int, c.NLayers)
	for l := range c.NLayers {
		if c.KVHeadsOf(l) == 0 {
			c.StateElems[l] = elems
		}
	}
	return nil
}
