package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Set is the weights of a model folder: one model.safetensors, or the
// shards a model.safetensors.index.json names, each tensor in exactly one.
type Set struct {
	Files  []*File
	byName map[string]*Tensor
}

// IndexName is the shard index of a sharded folder.
const IndexName = "model.safetensors.index.json"

// OpenDir opens the weights of a model folder: the shards its index names,
// or its single model.safetensors (or its only *.safetensors file).
func OpenDir(dir string) (*Set, error) {
	idx := filepath.Join(dir, IndexName)
	if _, err := os.Stat(idx); err == nil {
		return OpenIndex(idx)
	}
	path := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(path); err != nil {
		all, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
		if len(all) != 1 {
			return nil, fmt.Errorf("safetensors: %s has no model.safetensors or %s (%d .safetensors files)", dir, IndexName, len(all))
		}
		path = all[0]
	}
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	return newSet([]*File{f})
}

// OpenIndex opens the shards a model.safetensors.index.json names (file
// names in its directory) and checks that each tensor the index maps is
// in the shard it names.
func OpenIndex(path string) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if len(b) > MaxHeader {
		return nil, fmt.Errorf("safetensors: %s: %d bytes is over the limit of %d", path, len(b), MaxHeader)
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("safetensors: %s: empty weight_map", path)
	}
	var names []string
	seen := map[string]bool{}
	for t, shard := range idx.WeightMap {
		if shard == "" || shard != filepath.Base(shard) || strings.HasPrefix(shard, ".") {
			return nil, fmt.Errorf("safetensors: %s: tensor %q names shard %q (a file name in the same folder expected)", path, t, shard)
		}
		if !seen[shard] {
			seen[shard] = true
			names = append(names, shard)
		}
	}
	sort.Strings(names)
	var files []*File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, n := range names {
		f, err := Open(filepath.Join(filepath.Dir(path), n))
		if err != nil {
			closeAll()
			return nil, err
		}
		files = append(files, f)
	}
	s, err := newSet(files)
	if err != nil {
		closeAll()
		return nil, err
	}
	for t, shard := range idx.WeightMap {
		got, ok := s.byName[t]
		if !ok {
			closeAll()
			return nil, fmt.Errorf("safetensors: %s: tensor %q is in no shard (the index says %s)", path, t, shard)
		}
		if f := s.fileOf(got); filepath.Base(f.Path) != shard {
			closeAll()
			return nil, fmt.Errorf("safetensors: %s: tensor %q is in %s, the index says %s", path, t, filepath.Base(f.Path), shard)
		}
	}
	return s, nil
}

func newSet(files []*File) (*Set, error) {
	s := &Set{Files: files, byName: map[string]*Tensor{}}
	for _, f := range files {
		for i := range f.Tensors {
			t := &f.Tensors[i]
			if _, dup := s.byName[t.Name]; dup {
				return nil, fmt.Errorf("safetensors: tensor %q is in two shards (%s and another)", t.Name, f.Path)
			}
			s.byName[t.Name] = t
		}
	}
	return s, nil
}

func (s *Set) fileOf(t *Tensor) *File {
	for _, f := range s.Files {
		if g, ok := f.Tensor(t.Name); ok && g == t {
			return f
		}
	}
	return nil
}

// Tensor finds a tensor by name in any shard.
func (s *Set) Tensor(name string) (*Tensor, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Names lists every tensor name, sorted.
func (s *Set) Names() []string {
	var n []string
	for k := range s.byName {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Holds reports whether b lies within one shard's mapping (File.Holds).
func (s *Set) Holds(b []byte) bool {
	for _, f := range s.Files {
		if f.Holds(b) {
			return true
		}
	}
	return false
}

// Close unmaps every shard.
func (s *Set) Close() error {
	var errs []error
	for _, f := range s.Files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
