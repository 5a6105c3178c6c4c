//go:build linux

package kvcache

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/loom-inference/loom/internal/tensor"
)

// TestHugePages: a pool's layer arrays carry the huge-page advice
// (VmFlags "hg" in /proc/self/smaps) over the huge pages they contain.
func TestHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("no transparent huge pages in this kernel")
	}
	// 8 MiB a layer: K and V each span whole huge pages.
	p, err := NewTypedPool(2, 512, 256, Window{}, Types{K: tensor.F16, V: tensor.Q8_0})
	if err != nil {
		t.Fatal(err)
	}
	for l := range p.NLayers {
		for name, b := range map[string][]uint16{"K": p.K[l], "V": p.V[l]} {
			start := uintptr(unsafe.Pointer(&b[0]))
			lo := (start + hugePage - 1) &^ (hugePage - 1)
			if lo+hugePage > start+uintptr(2*len(b)) {
				t.Fatalf("layer %d %s: %d bytes hold no whole huge page", l, name, 2*len(b))
			}
			flags, err := vmFlags(lo)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(" "+flags+" ", " hg ") {
				t.Errorf("layer %d %s at %#x: VmFlags %q lack hg", l, name, lo, flags)
			}
		}
	}
}

// vmFlags returns the VmFlags of the mapping of this process that holds
// address a.
func vmFlags(a uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = lo <= a && a < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:")), nil
		}
	}
	return "", fmt.Errorf("no mapping holds %#x", a)
}
