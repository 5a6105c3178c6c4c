package quantize

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Options configure Run.
type Options struct {
	Threads int // goroutines quantizing rows (0: GOMAXPROCS)
	// AllowRequantize permits converting tensors that are already
	// quantized (llama-quantize's --allow-requantize); without it Run
	// refuses them before writing anything.
	AllowRequantize bool
	// Progress, if set, is called after each tensor with its index, the
	// count and the choice made.
	Progress func(i, n int, c Choice, d time.Duration)
}

// ModelOf reads what the rules need from a file's metadata.
func ModelOf(f *gguf.File) (Model, error) {
	arch, ok := f.String("general.architecture")
	if !ok {
		return Model{}, fmt.Errorf("%s: missing general.architecture", f.Path)
	}
	get := func(key string, def uint64) (int, error) {
		v, err := f.UintOr(arch+"."+key, def)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f.Path, err)
		}
		if v > 1<<20 {
			return 0, fmt.Errorf("%s: %s.%s = %d is out of range", f.Path, arch, key, v)
		}
		return int(v), nil
	}
	m := Model{Arch: arch}
	var err error
	if m.NLayer, err = get("block_count", 0); err != nil {
		return m, err
	}
	if m.NHead, err = get("attention.head_count", 0); err != nil {
		return m, err
	}
	if m.NHeadKV, err = get("attention.head_count_kv", uint64(m.NHead)); err != nil {
		return m, err
	}
	if m.NExpert, err = get("expert_count", 0); err != nil {
		return m, err
	}
	_, m.HasOutput = f.Tensor("output.weight")
	return m, nil
}

// Result summarizes a run.
type Result struct {
	Choices           []Choice
	BytesIn, BytesOut int64
}

// Run writes f quantized to ft into w: the metadata as it is but for
// general.file_type and general.quantization_version, the tensors in
// llama.cpp's order, each quantized or copied.
func Run(f *gguf.File, w io.Writer, ft FType, opts Options) (Result, error) {
	m, err := ModelOf(f)
	if err != nil {
		return Result{}, err
	}
	ts := make([]Tensor, len(f.Tensors))
	for i, t := range f.Tensors {
		ts[i] = Tensor{Name: t.Name, Type: t.Type, Dims: t.Dims}
	}
	Order(ts)
	plan, err := Plan(m, ts, ft)
	if err != nil {
		return Result{}, err
	}
	if !opts.AllowRequantize {
		if err := checkRequantize(plan); err != nil {
			return Result{}, err
		}
	}
	out := gguf.NewWriter()
	out.Alignment = f.Alignment
	for _, kv := range f.KVs {
		switch kv.Key {
		case "general.alignment", "general.file_type", "general.quantization_version":
			continue
		}
		out.Set(kv.Key, kv.Value)
	}
	out.Set("general.quantization_version", uint32(2))
	out.Set("general.file_type", uint32(ft))
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	res := Result{Choices: plan}
	for _, c := range plan {
		if err := out.AddTensor(c.Name, c.To, c.Dims, nil); err != nil {
			return res, err
		}
	}
	// A producer quantizes tensor i+1 while tensor i is written: the file
	// streams out, with at most a couple of tensors in memory.
	type result struct {
		data []byte
		err  error
		took time.Duration
	}
	ch := make(chan result, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(ch)
		for _, c := range plan {
			start := time.Now()
			ti, _ := f.Tensor(c.Name)
			data := f.TensorData(ti)
			var err error
			if c.To != c.Type {
				data, err = Convert(c, data, threads)
			}
			select {
			case ch <- result{data, err, time.Since(start)}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	_, err = out.Stream(w, func(i int) ([]byte, error) {
		r, ok := <-ch
		if !ok {
			return nil, fmt.Errorf("quantize: tensor %s was not produced", plan[i].Name)
		}
		ti, _ := f.Tensor(plan[i].Name)
		res.BytesIn += int64(ti.Size)
		res.BytesOut += int64(len(r.data))
		if r.err == nil && opts.Progress != nil { // here, so every call happens before Run returns
			opts.Progress(i, len(plan), plan[i], r.took)
		}
		return r.data, r.err
	})
	if err != nil {
		return res, err
	}
	return res, nil
}

// ErrRequantize is the error of a plan that would convert a tensor that is
// already quantized, without Options.AllowRequantize.
var ErrRequantize = errors.New("requantizing is disabled, as in llama-quantize")

// checkRequantize refuses, as llama-quantize does, a plan that changes the
// type of a tensor already quantized: llama.cpp converts a tensor when its
// chosen type differs from its own, and refuses to when its own type is a
// quantized one (ggml_is_quantized: anything but F32, F16 and BF16) unless
// allow_requantize. Tensors kept in their type are copied, so a Q8_0 file
// "quantized" to Q8_0 passes.
func checkRequantize(plan []Choice) error {
	for _, c := range plan {
		if c.To == c.Type {
			continue
		}
		switch c.Type {
		case tensor.F32, tensor.F16, tensor.BF16:
			continue
		}
		return fmt.Errorf("quantize: tensor %s is already %s; converting it to %s: %w", c.Name, c.Type, c.To, ErrRequantize)
	}
	return nil
}

// Convert turns one tensor's data into c.To, rows split across threads
// (each row is quantized on its own, so the result does not depend on how
// they are split).
func Convert(c Choice, src []byte, threads int) ([]byte, error) {
	if !quant.Supported(c.Type) && c.Type != tensor.F32 {
		return nil, fmt.Errorf("quantize: tensor %s: cannot read type %s", c.Name, c.Type)
	}
	if !quant.CanQuantize(c.To) {
		return nil, fmt.Errorf("quantize: tensor %s: cannot write type %s", c.Name, c.To)
	}
	rowLen := int(c.Dims[0])
	nrows := 1
	for _, d := range c.Dims[1:] {
		nrows *= int(d)
	}
	inRow, err := tensor.RowBytes(c.Type, uint64(rowLen))
	if err != nil {
		return nil, fmt.Errorf("quantize: tensor %s: %w", c.Name, err)
	}
	outRow, err := tensor.RowBytes(c.To, uint64(rowLen))
	if err != nil {
		return nil, fmt.Errorf("quantize: tensor %s: %w", c.Name, err)
	}
	if int(inRow)*nrows != len(src) {
		return nil, fmt.Errorf("quantize: tensor %s: %d bytes for %d rows of %d", c.Name, len(src), nrows, rowLen)
	}
	dst := make([]byte, int(outRow)*nrows)
	// Chunks of rows taken by the workers in turn: about 64K values each,
	// but at least 16 per worker, so the workers finish a tensor close
	// together (the next tensor waits for the last chunk of this one).
	chunk := max(1, min(65536/rowLen, nrows/(16*max(threads, 1))))
	var next int
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range min(threads, (nrows+chunk-1)/chunk) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]float32, chunk*rowLen)
			for {
				mu.Lock()
				lo := next
				next += chunk
				mu.Unlock()
				if lo >= nrows {
					return
				}
				hi := min(lo+chunk, nrows)
				x := buf[:(hi-lo)*rowLen]
				in := src[lo*int(inRow) : hi*int(inRow)]
				var err error
				switch {
				case c.Type == tensor.F32 && uintptr(unsafe.Pointer(unsafe.SliceData(in)))%4 == 0:
					x = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(in))), len(x)) // F32 rows as they are mapped
				case c.Type == tensor.F16:
					kernels.F16ToF32s(x, in) // the SIMD conversion: exact, as the table
				default:
					err = quant.Dequantize(c.Type, x, in)
				}
				out := dst[lo*int(outRow) : hi*int(outRow)]
				switch {
				case err != nil:
				case c.To == tensor.F16: // the SIMD conversion: the same round-to-nearest-even bits
					kernels.F32ToF16s(unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(out))), len(x)), x)
				default:
					err = quant.Quantize(c.To, out, x)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("quantize: tensor %s: %w", c.Name, err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return dst, firstErr
}
