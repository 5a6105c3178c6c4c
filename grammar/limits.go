package grammar

import (
	"errors"
	"fmt"
)

// Every parser, converter and matcher of this package bounds its depth,
// size and work explicitly (never by the Go stack): grammars, schemas and
// generated text come from clients. Exceeding a bound is a *LimitError
// naming the bound; errors.Is(err, ErrLimit) holds for all of them, so a
// server can answer 400 (the request asks too much) rather than 500.

// ErrLimit is matched (errors.Is) by every *LimitError.
var ErrLimit = errors.New("grammar: over a limit")

// LimitError reports a grammar, schema or input that exceeds one of the
// package's bounds.
type LimitError struct {
	Limit string // the bound: a Limits field (MaxStacks, …) or a schema constant (MaxSchemaVisits, …)
	Value int    // its value
	Msg   string // what exceeded it, and where
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("grammar: %s (limit %s = %d)", e.Msg, e.Limit, e.Value)
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// Limits bound what a grammar may cost to parse and to match. Zero fields
// take the defaults, which every real grammar and schema we know of stays
// far below. The run-time fields apply to every Matcher of the grammar.
type Limits struct {
	MaxBytes    int // grammar text size (default 1 MiB)
	MaxElements int // elements after repetitions are expanded (default 1<<20)
	MaxRepeat   int // bound of one {m,n} repetition (default 10000)
	MaxNesting  int // parenthesis depth (default 64, at most 1000)

	// MaxStacks bounds the parse stacks (llama.cpp's stacks: the ways the
	// input so far can continue) alive after one character, default 1<<16.
	// Parse refuses a grammar in which one element's expansion alone can
	// reach more (nested optional repetitions such as (("a"{0,1000}){0,1000}){0,1000}
	// multiply); a matcher refuses input that reaches more (ambiguous
	// grammars can double the stacks with every character).
	MaxStacks int
	// MaxStackDepth bounds the rule references open at once on one stack:
	// how deep the input may nest (each "(" of root ::= "(" root ")" | ""
	// opens one), default 10000. Parse refuses a grammar whose expansion
	// alone opens more.
	MaxStackDepth int
	// MaxStepWork bounds the expansion work of one character (frames and
	// rule alternatives visited), default 1<<20.
	MaxStepWork int
	// MaxCallWork bounds the expansion work of one Accept, Allows or Mask
	// call, default 1<<26 (about a second).
	MaxCallWork int
	// MaxMemory bounds the bytes one matcher's caches may hold, default
	// 256 MiB; they are rebuilt from the current state past an eighth of it.
	MaxMemory int
}

// Bounds of JSON Schema conversion (per schema added to a Builder; the
// JSON depth bound applies to reading the schema text).
const (
	MaxSchemaVisits = 100000  // subschemas visited
	MaxSchemaDepth  = 256     // subschemas nested, $ref chains included
	MaxSchemaOutput = 1 << 20 // bytes of GBNF produced (what Parse takes by default)
	MaxJSONDepth    = 128     // nesting of the schema's JSON text
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxBytes, 1<<20)
	def(&l.MaxElements, 1<<20)
	def(&l.MaxRepeat, 10000)
	def(&l.MaxNesting, 64)
	l.MaxNesting = min(l.MaxNesting, 1000) // the parser recurses per level
	def(&l.MaxStacks, 1<<16)
	def(&l.MaxStackDepth, 10000)
	def(&l.MaxStepWork, 1<<20)
	def(&l.MaxCallWork, 1<<26)
	def(&l.MaxMemory, 256<<20)
	return l
}
