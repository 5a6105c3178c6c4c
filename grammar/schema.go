package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JSON Schema → GBNF, following llama.cpp's json-schema-to-grammar (b4748):
// the same primitive rules, property order (required first, then optional,
// each in document order), additionalProperties default (none), integer
// ranges spelled digit by digit, string lengths as repetitions. Where
// llama.cpp silently ignores a keyword (and so accepts more than the
// schema allows), this converter refuses the schema with an error naming
// the keyword and where it is; it never returns a looser grammar.

const spaceRule = `| " " | "\n" [ \t]{0,20}`

var primitiveRules = map[string]struct {
	rule string
	deps []string
}{
	"boolean":       {`("true" | "false") space`, nil},
	"decimal-part":  {`[0-9]{1,16}`, nil},
	"integral-part": {`[0] | [1-9] [0-9]{0,15}`, nil},
	"number":        {`("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)? space`, []string{"integral-part", "decimal-part"}},
	"integer":       {`("-"? integral-part) space`, []string{"integral-part"}},
	"value":         {`object | array | string | number | boolean | null`, []string{"object", "array", "string", "number", "boolean", "null"}},
	"object":        {`"{" space ( string ":" space value ("," space string ":" space value)* )? "}" space`, []string{"string", "value"}},
	"array":         {`"[" space ( value ("," space value)* )? "]" space`, []string{"value"}},
	"uuid":          {`"\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"" space`, nil},
	// char differs from llama.cpp's in taking the \/ escape (valid JSON)
	// and in the \u escapes of UTF-16 surrogates: a high one must be
	// followed by a low one (the pair is one character, so it counts once
	// against minLength/maxLength); lone ones are not characters and are
	// refused.
	"char":   {`[^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | "u" ([0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | [dD] [89abAB] [0-9a-fA-F]{2} "\\u" [dD] [c-fC-F] [0-9a-fA-F]{2}))`, nil},
	"string": {`"\"" char* "\"" space`, []string{"char"}},
	"null":   {`"null" space`, nil},

	// date differs from llama.cpp's (which takes any day 01-31 in any
	// month): only calendar dates, February 29th only in leap years, so
	// every date it produces is one a validator accepts.
	"date": {`[0-9]{4} "-" ( ("0" [13578] | "1" [02]) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ("0" [469] | "11") "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ) | ` +
		`( [0-9] [0-9] ( "0" [48] | [2468] [048] | [13579] [26] ) | ( [02468] [048] | [13579] [26] ) "00" ) "-02-29"`, nil},
	"time":             {`([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )`, nil},
	"date-time":        {`date "T" time`, []string{"date", "time"}},
	"date-string":      {`"\"" date "\"" space`, []string{"date"}},
	"time-string":      {`"\"" time "\"" space`, []string{"time"}},
	"date-time-string": {`"\"" date-time "\"" space`, []string{"date-time"}},
}

var reservedNames = map[string]bool{"root": true, "dot": true}

func init() {
	for k := range primitiveRules {
		reservedNames[k] = true
	}
}

// annotations never change what a schema accepts.
var annotations = map[string]bool{
	"title": true, "description": true, "$schema": true, "$id": true, "$comment": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true,
}

var (
	invalidRuleChars = regexp.MustCompile(`[^a-zA-Z0-9-]+`)
	uuidFormat       = regexp.MustCompile(`^uuid[1-5]?$`)
)

type converter struct {
	rules    map[string]string
	refs     map[string]any
	refRule  map[string]string // $ref → the rule made for it (or being made)
	suffix   map[string]int    // escaped name → the next numeric suffix to try
	dups     map[string]string // escaped name + "\x00" + rule → its suffixed name
	root     any
	visits   int
	depth    int // subschemas being visited (MaxSchemaDepth)
	output   int // bytes of rules made (MaxSchemaOutput)
	work     int // units of work (rules made and their bytes; tests check it stays linear)
	lenient  bool
	warnings []string
	base     string // prefix of rules made for $refs (Builder schemas)
}

// SchemaError names the place in the schema that could not be converted.
// Err is the *LimitError when a bound (MaxSchemaVisits, MaxSchemaDepth,
// MaxSchemaOutput, MaxJSONDepth) was exceeded.
type SchemaError struct {
	Path string // JSON pointer of the subschema
	Msg  string
	Err  error
}

func (e *SchemaError) Unwrap() error { return e.Err }

func (e *SchemaError) Error() string {
	p := e.Path
	if p == "" {
		p = "#"
	}
	return fmt.Sprintf("json schema: at %s: %s", p, e.Msg)
}

// SchemaOptions change how a schema is converted.
type SchemaOptions struct {
	// Lenient turns keywords the grammar cannot enforce (uniqueItems,
	// number bounds, multipleOf, …) into warnings, as llama.cpp silently
	// does, instead of errors. The grammar then accepts more than the schema.
	Lenient bool
}

// SchemaToGBNF converts a JSON Schema to GBNF text (rules sorted by name,
// as llama.cpp prints them); keywords it cannot enforce are errors.
func SchemaToGBNF(schema []byte) (string, error) {
	text, _, err := ConvertSchema(schema, SchemaOptions{})
	return text, err
}

// ConvertSchema converts a JSON Schema to GBNF text; warnings list what
// lenient mode ignored.
func ConvertSchema(schema []byte, opts SchemaOptions) (text string, warnings []string, err error) {
	b := NewBuilder(opts)
	if _, err := b.AddSchema("", schema); err != nil {
		return "", nil, err
	}
	return b.Text(), b.Warnings(), nil
}

// Builder assembles one grammar from several schemas and hand-written
// rules (tool calls: one argument schema per function). Rules are shared
// where they are equal.
type Builder struct{ c *converter }

// NewBuilder starts an empty grammar (only the whitespace rule).
func NewBuilder(opts SchemaOptions) *Builder {
	return &Builder{c: &converter{rules: map[string]string{"space": spaceRule}, suffix: map[string]int{}, dups: map[string]string{}, lenient: opts.Lenient}}
}

// AddSchema converts schema into rules and returns the name of the rule
// matching it: name itself, or root when name is empty.
func (b *Builder) AddSchema(name string, schema []byte) (rule string, err error) {
	root, err := parseJSON(schema)
	if err != nil {
		if le, ok := err.(*LimitError); ok {
			return "", &SchemaError{Msg: le.Msg + fmt.Sprintf(" (limit %s = %d)", le.Limit, le.Value), Err: le}
		}
		return "", fmt.Errorf("json schema: %w", err)
	}
	c := b.c
	c.root, c.base, c.refs, c.refRule, c.depth = root, name, map[string]any{}, map[string]string{}, 0
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*SchemaError)
			if !ok {
				panic(r)
			}
			for _, name := range c.refRule { // names reserved for $refs left unmade
				if c.rules[name] == reservedRule {
					delete(c.rules, name)
				}
			}
			rule, err = "", se
		}
	}()
	c.collectRefs(root, "")
	return c.visit(root, name, ""), nil
}

// SetLenient changes the lenient option for the schemas added next.
func (b *Builder) SetLenient(on bool) { b.c.lenient = on }

// AddRule adds a hand-written rule (GBNF syntax) and returns its name,
// suffixed if a different rule already has it.
func (b *Builder) AddRule(name, body string) string { return b.c.addRule(name, body) }

// Literal quotes s as a GBNF string literal.
func Literal(s string) string { return formatLiteral(s) }

// JSONLiteral is the GBNF literal of s encoded as a JSON string.
func JSONLiteral(s string) string { return formatLiteral(dumpJSON(s)) }

// Warnings lists what lenient mode ignored so far.
func (b *Builder) Warnings() []string { return b.c.warnings }

// Text returns the grammar, rules sorted by name.
func (b *Builder) Text() string {
	c := b.c
	names := make([]string, 0, len(c.rules))
	for k := range c.rules {
		names = append(names, k)
	}
	sort.Strings(names)
	var sb strings.Builder
	for _, k := range names {
		fmt.Fprintf(&sb, "%s ::= %s\n", k, c.rules[k])
	}
	return sb.String()
}

// FromSchema converts a JSON Schema and parses the result.
func FromSchema(schema []byte) (*Grammar, error) {
	g, _, err := FromSchemaOptions(schema, SchemaOptions{})
	return g, err
}

// FromSchemaOptions converts a JSON Schema with options and parses the result.
func FromSchemaOptions(schema []byte, opts SchemaOptions) (*Grammar, []string, error) {
	text, warnings, err := ConvertSchema(schema, opts)
	if err != nil {
		return nil, nil, err
	}
	g, err := Parse(text)
	if errors.Is(err, ErrLimit) {
		return nil, nil, fmt.Errorf("json schema: the converted grammar is too costly: %w", err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("json schema: the converted grammar is invalid: %w", err)
	}
	return g, warnings, nil
}

// AnyJSONObject is the schema behind --json and response_format json_object.
const AnyJSONObject = `{"type": "object"}`

func fail(path, format string, args ...any) {
	panic(&SchemaError{Path: clip(path, 200), Msg: clip(fmt.Sprintf(format, args...), 300)})
}

// clip cuts s to about n bytes (on a character boundary) for a message:
// schemas quoted in errors may be megabytes long.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}

// failLimit stops the conversion at path with a *LimitError.
func failLimit(path, limit string, value int, format string, args ...any) {
	le := &LimitError{limit, value, fmt.Sprintf(format, args...)}
	panic(&SchemaError{Path: clip(path, 200), Msg: le.Msg + fmt.Sprintf(" (limit %s = %d)", limit, value), Err: le})
}

// collectRefs records every local $ref's target (only "#/..." pointers).
func (c *converter) collectRefs(v any, path string) {
	switch v := v.(type) {
	case []any:
		for i, x := range v {
			c.collectRefs(x, path+"/"+strconv.Itoa(i))
		}
	case *object:
		if r, ok := v.get("$ref"); ok {
			ref, _ := r.(string)
			if ref != "#" && !strings.HasPrefix(ref, "#/") {
				fail(path, "$ref %q: only local references (#/...) are supported", ref)
			}
			target := c.root
			for _, tok := range strings.Split(ref, "/")[1:] {
				tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
				var ok bool
				switch t := target.(type) {
				case *object:
					target, ok = t.get(tok)
				case []any:
					i, err := strconv.Atoi(tok)
					if ok = err == nil && i >= 0 && i < len(t); ok {
						target = t[i]
					}
				}
				if !ok {
					fail(path, "$ref %q does not resolve", ref)
				}
			}
			c.refs[ref] = target
		}
		for _, k := range v.keys {
			c.collectRefs(v.vals[k], path+"/"+k)
		}
	}
}

func (c *converter) addRule(name, rule string) string {
	esc := invalidRuleChars.ReplaceAllString(name, "-")
	c.work += 1 + len(rule)
	if old, ok := c.rules[esc]; !ok || old == rule || old == reservedRule {
		c.setRule(esc, rule, ok && old != reservedRule)
		return esc
	}
	// Taken by another rule: the first of esc0, esc1, … free or equal, as
	// llama.cpp picks it, found in amortized constant time (names that
	// escape alike, e.g. properties "a!" and "a?", would otherwise make
	// the scan quadratic).
	key := esc + "\x00" + rule
	if k, ok := c.dups[key]; ok {
		return k
	}
	for i := c.suffix[esc]; ; i++ {
		k := esc + strconv.Itoa(i)
		c.work++
		if old, ok := c.rules[k]; !ok || old == rule {
			c.suffix[esc], c.dups[key] = i+1, k
			c.setRule(k, rule, ok)
			return k
		}
	}
}

// setRule stores a rule, counting the bytes of new ones against
// MaxSchemaOutput.
func (c *converter) setRule(name, rule string, exists bool) {
	if !exists {
		c.output += len(name) + len(rule) + 6
		if c.output > MaxSchemaOutput {
			failLimit("", "MaxSchemaOutput", MaxSchemaOutput, "the schema's grammar would be over %d bytes", MaxSchemaOutput)
		}
	}
	c.rules[name] = rule
}

func (c *converter) addPrimitive(name, key string) string {
	p := primitiveRules[key]
	n := c.addRule(name, p.rule)
	for _, dep := range p.deps {
		if _, ok := c.rules[dep]; !ok {
			c.addPrimitive(dep, dep)
		}
	}
	return n
}

func join(name, suffix string) string {
	if name == "" {
		return suffix
	}
	return name + "-" + suffix
}

// only fails unless every key of o is an annotation or listed in used; in
// lenient mode the others become warnings instead.
func (c *converter) only(o *object, path string, used ...string) {
	for _, k := range o.keys {
		if annotations[k] {
			continue
		}
		ok := false
		for _, u := range used {
			if k == u {
				ok = true
				break
			}
		}
		if !ok {
			msg := fmt.Sprintf("keyword %q is not supported here (a grammar without it would accept values the schema refuses)", k)
			if !c.lenient {
				fail(path, "%s", msg)
			}
			c.warnings = append(c.warnings, (&SchemaError{Path: path, Msg: msg + "; ignored"}).Error())
		}
	}
}

// tick counts one subschema visited against MaxSchemaVisits.
func (c *converter) tick(path string) {
	if c.visits++; c.visits > MaxSchemaVisits {
		failLimit(path, "MaxSchemaVisits", MaxSchemaVisits, "schema too large (over %d subschemas visited)", MaxSchemaVisits)
	}
}

func (c *converter) visit(schema any, name, path string) string {
	c.tick(path)
	if c.depth++; c.depth > MaxSchemaDepth {
		failLimit(path, "MaxSchemaDepth", MaxSchemaDepth, "subschemas (and $ref chains) nested deeper than %d", MaxSchemaDepth)
	}
	defer func() { c.depth-- }()
	ruleName := name
	if reservedNames[name] {
		ruleName = name + "-"
	} else if name == "" {
		ruleName = "root"
	}
	switch s := schema.(type) {
	case bool:
		if s {
			return c.addRule(ruleName, c.addPrimitive("value", "value"))
		}
		fail(path, "the schema false accepts nothing")
	case *object:
		return c.visitObject(s, name, ruleName, path)
	}
	fail(path, "a schema must be an object or a boolean, not %s", dumpJSON(schema))
	return ""
}

var jsonTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "integer": true, "string": true}

func typeOf(s *object, path string) (string, []string) {
	t, ok := s.get("type")
	if !ok {
		return "", nil
	}
	switch t := t.(type) {
	case string:
		return t, nil
	case []any:
		// At most the seven JSON types, each once (the list is split into
		// one subschema per type, each copying the other keywords).
		var ts []string
		for _, x := range t {
			xs, ok := x.(string)
			if !ok {
				fail(path, "type list entries must be strings")
			}
			if !jsonTypes[xs] {
				fail(path, "unknown type %q", xs)
			}
			if slices.Contains(ts, xs) {
				fail(path, "type %q is listed twice", xs)
			}
			ts = append(ts, xs)
		}
		return "", ts
	}
	fail(path, "type must be a string or a list of strings")
	return "", nil
}

// typeKeywords are the keywords that apply to values of one type; when a
// type list is split into alternatives, each keeps its own.
var typeKeywords = map[string][]string{
	"string":  {"minLength", "maxLength", "pattern", "format"},
	"integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
	"number":  {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
	"array":   {"items", "prefixItems", "minItems", "maxItems"},
	"object":  {"properties", "required", "additionalProperties"},
}

// keywordTypes inverts typeKeywords: keyword → the types it applies to.
var keywordTypes = map[string]map[string]bool{}

func init() {
	for t, kws := range typeKeywords {
		for _, k := range kws {
			if keywordTypes[k] == nil {
				keywordTypes[k] = map[string]bool{}
			}
			keywordTypes[k][t] = true
		}
	}
}

func (c *converter) visitObject(s *object, name, ruleName, path string) string {
	typ, types := typeOf(s, path)
	is := func(t string) bool { return typ == "" && types == nil || typ == t }
	switch {
	case s.has("$ref"):
		c.only(s, path, "$ref")
		ref, _ := s.vals["$ref"].(string)
		return c.addRule(ruleName, c.resolveRef(ref, path))
	case s.has("oneOf") || s.has("anyOf"):
		key := "anyOf"
		if s.has("oneOf") {
			key = "oneOf"
		}
		c.only(s, path, key, "type")
		alts, ok := s.vals[key].([]any)
		if !ok || len(alts) == 0 {
			fail(path, "%s must be a non-empty list", key)
		}
		return c.addRule(ruleName, c.union(name, path+"/"+key, alts))
	case types != nil:
		var alts []any
		for _, t := range types {
			sub := &object{vals: map[string]any{}}
			sub.keys, sub.vals["type"] = append(sub.keys, "type"), t
			for _, k := range s.keys {
				if k == "type" || annotations[k] {
					continue
				}
				if ts, typed := keywordTypes[k]; typed && !ts[t] {
					continue // another type's keyword: irrelevant to this one
				}
				sub.keys = append(sub.keys, k)
				sub.vals[k] = s.vals[k]
			}
			alts = append(alts, sub)
		}
		return c.addRule(ruleName, c.union(name, path, alts))
	case s.has("const"):
		c.only(s, path, "const", "type")
		return c.addRule(ruleName, formatLiteral(dumpJSON(s.vals["const"]))+" space")
	case s.has("enum"):
		c.only(s, path, "enum", "type")
		vals, ok := s.vals["enum"].([]any)
		if !ok || len(vals) == 0 {
			fail(path, "enum must be a non-empty list")
		}
		var alts []string
		for _, v := range vals {
			alts = append(alts, formatLiteral(dumpJSON(v)))
		}
		return c.addRule(ruleName, "("+strings.Join(alts, " | ")+") space")
	case is("object") && (s.has("properties") || s.has("additionalProperties") && s.vals["additionalProperties"] != true):
		c.only(s, path, "type", "properties", "required", "additionalProperties")
		required := map[string]bool{}
		if r, ok := s.get("required"); ok {
			list, ok := r.([]any)
			if !ok {
				fail(path, "required must be a list")
			}
			for _, x := range list {
				if k, ok := x.(string); ok {
					required[k] = true
				}
			}
		}
		props := c.properties(s, path)
		for k := range required {
			if props.vals[k] == nil && !props.has(k) {
				ap, _ := s.get("additionalProperties")
				if ap == nil || ap == false {
					fail(path, "required property %q is not among the properties and additional properties are not allowed", k)
				}
			}
		}
		ap, _ := s.get("additionalProperties")
		return c.addRule(ruleName, c.objectRule(props, required, name, path, ap))
	case is("object") && s.has("allOf"):
		c.only(s, path, "type", "allOf")
		props := &object{vals: map[string]any{}}
		required := map[string]bool{}
		add := func(comp any, req bool, p string) {
			o, ok := comp.(*object)
			// Follow $refs iteratively; a chain that comes back is refused
			// (it would be followed forever).
			for seen := map[string]bool{}; ok && o.has("$ref"); o, ok = c.refs[o.vals["$ref"].(string)].(*object) {
				ref, _ := o.vals["$ref"].(string)
				if seen[ref] {
					fail(p, "$ref %q refers back to itself", ref)
				}
				seen[ref] = true
				c.tick(p) // each step counts as a visit: chains × entries stay bounded
			}
			if !ok {
				fail(p, "allOf entries must be objects")
			}
			switch {
			case o.has("properties"):
				c.only(o, p, "type", "properties", "required")
				ps := c.properties(o, p)
				for _, k := range ps.keys {
					if !props.has(k) {
						props.keys = append(props.keys, k)
					}
					props.vals[k] = ps.vals[k]
					if req {
						required[k] = true
					}
				}
			default:
				fail(p, "allOf entries must have properties or a $ref (other combinations are not supported)")
			}
		}
		list, _ := s.vals["allOf"].([]any)
		for i, t := range list {
			p := fmt.Sprintf("%s/allOf/%d", path, i)
			if o, ok := t.(*object); ok && o.has("anyOf") {
				alts, _ := o.vals["anyOf"].([]any)
				for j, tt := range alts {
					add(tt, false, fmt.Sprintf("%s/anyOf/%d", p, j))
				}
			} else {
				add(t, true, p)
			}
		}
		return c.addRule(ruleName, c.objectRule(props, required, name, path, nil))
	case is("array") && (s.has("items") || s.has("prefixItems") || s.has("minItems") || s.has("maxItems")):
		c.only(s, path, "type", "items", "prefixItems", "minItems", "maxItems")
		items, hasItems := s.get("items")
		prefix, hasPrefix := s.get("prefixItems")
		if list, ok := items.([]any); ok && !hasPrefix {
			prefix, hasPrefix, hasItems = list, true, false
		}
		if hasPrefix {
			list, ok := prefix.([]any)
			if !ok {
				fail(path, "prefixItems must be a list")
			}
			if hasItems && items != false {
				fail(path, "prefixItems followed by more items is not supported (give items: false)")
			}
			if s.has("minItems") || s.has("maxItems") {
				fail(path, "minItems/maxItems with prefixItems is not supported")
			}
			rule := `"[" space `
			for i, it := range list {
				if i > 0 {
					rule += ` "," space `
				}
				rule += c.visit(it, join(name, "tuple-"+strconv.Itoa(i)), fmt.Sprintf("%s/prefixItems/%d", path, i))
			}
			return c.addRule(ruleName, rule+` "]" space`)
		}
		var item string
		if hasItems {
			item = c.visit(items, join(name, "item"), path+"/items")
		} else {
			item = c.addPrimitive("value", "value")
		}
		lo := intKeyword(s, "minItems", 0, path)
		hi := intKeyword(s, "maxItems", -1, path)
		if hi >= 0 && hi < lo {
			fail(path, "maxItems %d is below minItems %d", hi, lo)
		}
		return c.addRule(ruleName, `"[" space `+buildRepetition(item, lo, hi, `"," space`)+` "]" space`)
	case is("string") && s.has("pattern"):
		c.only(s, path, "type", "pattern")
		pat, ok := s.vals["pattern"].(string)
		if !ok {
			fail(path, "pattern must be a string")
		}
		body, err := patternToGBNF(pat)
		if err != nil {
			fail(path+"/pattern", "%v", err)
		}
		return c.addRule(ruleName, `"\"" (`+body+`) "\"" space`)
	case is("string") && s.has("format"):
		c.only(s, path, "type", "format")
		f, _ := s.vals["format"].(string)
		if uuidFormat.MatchString(f) {
			return c.addPrimitive(rootOr(ruleName, f), "uuid")
		}
		if _, ok := primitiveRules[f+"-string"]; ok && (f == "date" || f == "time" || f == "date-time") {
			return c.addRule(ruleName, c.addPrimitive(f+"-string", f+"-string"))
		}
		fail(path, "string format %q is not supported (supported: date, time, date-time, uuid)", f)
	case typ == "string" && (s.has("minLength") || s.has("maxLength")):
		c.only(s, path, "type", "minLength", "maxLength")
		ch := c.addPrimitive("char", "char")
		lo := intKeyword(s, "minLength", 0, path)
		hi := intKeyword(s, "maxLength", -1, path)
		if hi >= 0 && hi < lo {
			fail(path, "maxLength %d is below minLength %d", hi, lo)
		}
		return c.addRule(ruleName, `"\"" `+buildRepetition(ch, lo, hi, "")+` "\"" space`)
	case typ == "integer" && (s.has("minimum") || s.has("maximum") || s.has("exclusiveMinimum") || s.has("exclusiveMaximum")):
		c.only(s, path, "type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
		r := intRange{}
		if v, ok := numKeyword(s, "minimum", path); ok {
			r.lo, r.hasLo = int64(math.Ceil(v)), true
		}
		if v, ok := numKeyword(s, "exclusiveMinimum", path); ok {
			if e := int64(math.Floor(v)) + 1; !r.hasLo || e > r.lo {
				r.lo, r.hasLo = e, true
			}
		}
		if v, ok := numKeyword(s, "maximum", path); ok {
			r.hi, r.hasHi = int64(math.Floor(v)), true
		}
		if v, ok := numKeyword(s, "exclusiveMaximum", path); ok {
			if e := int64(math.Ceil(v)) - 1; !r.hasHi || e < r.hi {
				r.hi, r.hasHi = e, true
			}
		}
		if r.hasLo && r.hasHi && r.lo > r.hi {
			fail(path, "the integer range is empty")
		}
		var b strings.Builder
		b.WriteString("(")
		buildMinMaxInt(r, &b, 16, true)
		b.WriteString(") space")
		return c.addRule(ruleName, b.String())
	case is("object") && len(s.keys) == 0 || typ == "object":
		c.only(s, path, "type")
		return c.addRule(ruleName, c.addPrimitive("object", "object"))
	}
	if typ == "" {
		if len(withoutAnnotations(s)) == 0 {
			return c.addRule(ruleName, c.addPrimitive("value", "value"))
		}
		fail(path, "unrecognized schema %s", dumpJSON(s))
	}
	if _, ok := primitiveRules[typ]; !ok || !map[string]bool{"boolean": true, "number": true, "integer": true, "string": true, "null": true, "array": true}[typ] {
		fail(path, "unknown type %q", typ)
	}
	c.only(s, path, "type")
	return c.addPrimitive(rootOr(ruleName, typ), typ)
}

// rootOr names a primitive after itself except at the root (llama.cpp
// inlines the root's primitive and refers to the others by their names).
func rootOr(ruleName, name string) string {
	if ruleName == "root" {
		return "root"
	}
	return name
}

func withoutAnnotations(s *object) []string {
	var out []string
	for _, k := range s.keys {
		if !annotations[k] {
			out = append(out, k)
		}
	}
	return out
}

func (c *converter) properties(s *object, path string) *object {
	p, ok := s.get("properties")
	if !ok {
		return &object{vals: map[string]any{}}
	}
	o, ok := p.(*object)
	if !ok {
		fail(path, "properties must be an object")
	}
	return o
}

func intKeyword(s *object, k string, def int, path string) int {
	v, ok := numKeyword(s, k, path)
	if !ok {
		return def
	}
	if v < 0 || v != math.Trunc(v) || v > 1<<20 {
		fail(path, "%s must be a non-negative integer up to %d", k, 1<<20)
	}
	return int(v)
}

func numKeyword(s *object, k, path string) (float64, bool) {
	v, ok := s.get(k)
	if !ok {
		return 0, false
	}
	n, ok := v.(json.Number)
	if !ok {
		fail(path, "%s must be a number", k)
	}
	f, err := n.Float64()
	if err != nil || math.Abs(f) > 1e15 {
		fail(path, "%s %s is out of range", k, n)
	}
	return f, true
}
