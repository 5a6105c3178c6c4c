package jinja

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits bound what one render may do. Every way a template can grow a
// value (concatenation, repetition, join, replace, format, padding,
// tojson, building lists and dicts, range, namespace attributes, the
// output itself), loop, call or recurse is charged to one budget per
// render; going over a limit stops the render with a *LimitError. The
// zero value of a field is its default.
type Limits struct {
	// MaxOutput bounds the rendered text, in bytes (default 8 MiB).
	MaxOutput int
	// MaxBytes bounds the bytes of all values a render creates, summed
	// over the render (strings, list and dict slots, the output): it bounds
	// both the memory a render holds and the copying it does (default
	// 64 MiB).
	MaxBytes int
	// MaxSteps bounds the work: one step per template node and expression
	// evaluated and per loop iteration, one per item a filter, test or
	// comparison visits, one per 16 bytes a string operation scans (more
	// for the costly text filters: urlize, wordwrap, lipsum) (default
	// 10,000,000: about a second at worst).
	MaxSteps int
	// MaxDepth bounds nested macro calls, caller() and recursive loop()
	// calls (default 64).
	MaxDepth int
}

const (
	defaultMaxOutput = 8 << 20
	defaultMaxBytes  = 64 << 20
	defaultMaxSteps  = 10_000_000
	defaultMaxDepth  = 64

	// maxNesting bounds the nesting of a template's blocks and expressions
	// as parsed (Python's Jinja2 gives up well before: its compiler
	// recurses), of the evaluator at run time (expressions, blocks and
	// macro bodies together: maxRunNesting), and of values walked by repr,
	// tojson and comparisons (maxValueDepth).
	maxNesting    = 256
	maxRunNesting = 2048
	maxValueDepth = 512

	// Bytes charged for a slot of a list or tuple and an entry of a dict.
	slotBytes  = 16
	entryBytes = 64
)

func (l Limits) withDefaults() Limits {
	if l.MaxOutput <= 0 {
		l.MaxOutput = defaultMaxOutput
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = defaultMaxBytes
	}
	if l.MaxSteps <= 0 {
		l.MaxSteps = defaultMaxSteps
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = defaultMaxDepth
	}
	return l
}

// ErrLimit matches (errors.Is) every *LimitError: a template that tried
// to do more than its budget allows, a client error rather than a server
// one.
var ErrLimit = errors.New("jinja: template limit exceeded")

// LimitError reports which limit a parse or render exceeded. Limit is the
// name of the Limits field (MaxOutput, MaxBytes, MaxSteps, MaxDepth), or
// MaxNesting for the fixed bound on the nesting of blocks, expressions and
// values.
type LimitError struct {
	Line  int
	Limit string
	Max   int
}

func (e *LimitError) Error() string {
	what := map[string]string{
		"MaxOutput":  "bytes of output",
		"MaxBytes":   "bytes of values created",
		"MaxSteps":   "steps",
		"MaxDepth":   "nested calls",
		"MaxNesting": "levels of nesting",
	}[e.Limit]
	at := ""
	if e.Line > 0 {
		at = fmt.Sprintf("line %d: ", e.Line)
	}
	return fmt.Sprintf("jinja: %stemplate exceeds its limit %s (%d %s)", at, e.Limit, e.Max, what)
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// budget is the render's account.
type budget struct {
	lim   Limits
	line  int // the line being evaluated, for errors raised deep in filters
	bytes int // bytes of values created so far
	steps int
	depth int // nested macro / loop() calls
	nest  int // evaluator recursion (expressions and blocks)
}

func (b *budget) exceed(limit string, max int) {
	panic(&LimitError{Line: b.line, Limit: limit, Max: max})
}

// alloc charges n bytes of new values.
func (b *budget) alloc(n int) {
	if n < 0 || n > b.lim.MaxBytes-b.bytes {
		b.exceed("MaxBytes", b.lim.MaxBytes)
	}
	b.bytes += n
}

// fits reports whether n more bytes would fit (for sizes computed before
// building, which may not fit an int).
func (b *budget) fits(n int64) bool { return n >= 0 && n <= int64(b.lim.MaxBytes-b.bytes) }

// need fails unless n more bytes fit; it charges nothing.
func (b *budget) need(n int64) {
	if !b.fits(n) {
		b.exceed("MaxBytes", b.lim.MaxBytes)
	}
}

// step charges n steps.
func (b *budget) step(n int) {
	if n < 0 || n > b.lim.MaxSteps-b.steps {
		b.exceed("MaxSteps", b.lim.MaxSteps)
	}
	b.steps += n
}

// scan charges the steps of reading n bytes.
func (b *budget) scan(n int) { b.step(1 + n>>4) }

// enter and leave bound the evaluator's recursion.
func (b *budget) enter() {
	if b.nest++; b.nest > maxRunNesting {
		b.exceed("MaxNesting", maxRunNesting)
	}
}
func (b *budget) leave() { b.nest-- }

// call and ret bound nested macro and loop() calls.
func (b *budget) call() {
	if b.depth++; b.depth > b.lim.MaxDepth {
		b.exceed("MaxDepth", b.lim.MaxDepth)
	}
}
func (b *budget) ret() { b.depth-- }

// sbuf is a string builder that charges what it holds to the budget (b
// nil: uncharged, for short internal text).
type sbuf struct {
	b *budget
	strings.Builder
}

func (w *sbuf) charge(n int) {
	if w.b != nil {
		w.b.alloc(n)
	}
	if c := w.Cap(); w.Len()+n > c && c >= 4096 {
		w.Grow(max(n, c)) // double: strings.Builder grows large buffers by 1.25x
	}
}

func (w *sbuf) WriteString(s string) (int, error) { w.charge(len(s)); return w.Builder.WriteString(s) }
func (w *sbuf) Write(p []byte) (int, error)       { w.charge(len(p)); return w.Builder.Write(p) }
func (w *sbuf) WriteByte(c byte) error            { w.charge(1); return w.Builder.WriteByte(c) }
func (w *sbuf) WriteRune(r rune) (int, error) {
	w.charge(utf8.RuneLen(r))
	return w.Builder.WriteRune(r)
}

// fixed bounds a computed size: a*b + c, or -1 on overflow.
func fixed(a, b, c int64) int64 {
	if a < 0 || b < 0 || c < 0 {
		return -1
	}
	if a != 0 && b > (1<<62)/a {
		return -1
	}
	if a*b > (1<<62)-c {
		return -1
	}
	return a*b + c
}
