package grammar

// The rules the schema converter builds from parts: $ref resolution,
// unions, objects with their required and optional properties (one chain of
// optional suffixes, built from the end), keys that must differ from the
// declared ones, and literals, classes and bounded repetitions.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// reservedRule holds a name while the rule for a $ref is being made, so
// that recursive references can name it and no other $ref takes it. Only
// that rule can claim it: every other rule made meanwhile has a longer
// name (join(name, …)) or one of its own.
const reservedRule = "\x00reserved"

// resolveRef returns the rule for a local $ref, making it on first use.
// The rule is named after the reference's last token (as llama.cpp names
// it), suffixed when that name is already another rule's: llama.cpp then
// reuses the other rule, which may accept other values altogether.
func (c *converter) resolveRef(ref, path string) string {
	if r, ok := c.refRule[ref]; ok {
		return r
	}
	target, ok := c.refs[ref]
	if !ok {
		fail(path, "$ref %q does not resolve", ref)
	}
	name := ref[strings.LastIndex(ref, "/")+1:]
	if name == "#" || name == "" {
		name = "root"
		if c.base != "" {
			name = c.base
		}
	} else {
		name = join(c.base, name)
	}
	// The name visit gives the rule it makes (see visit).
	ruleName := name
	if reservedNames[name] {
		ruleName = name + "-"
	}
	esc := invalidRuleChars.ReplaceAllString(ruleName, "-")
	if _, taken := c.rules[esc]; taken {
		i := c.suffix[esc]
		for ; ; i++ {
			if _, taken := c.rules[esc+strconv.Itoa(i)]; !taken {
				break
			}
		}
		c.suffix[esc] = i + 1
		esc += strconv.Itoa(i)
		name = esc
	}
	c.rules[esc] = reservedRule
	c.refRule[ref] = esc
	got := c.visit(target, name, ref)
	if c.rules[esc] == reservedRule {
		delete(c.rules, esc) // the target was a primitive, named otherwise
	}
	c.refRule[ref] = got
	return got
}

func (c *converter) union(name, path string, alts []any) string {
	var out []string
	for i, a := range alts {
		alt := name + "-" + strconv.Itoa(i)
		if name == "" {
			alt = "alternative-" + strconv.Itoa(i)
		}
		out = append(out, c.visit(a, alt, fmt.Sprintf("%s/%d", path, i)))
	}
	return strings.Join(out, " | ")
}

// objectRule spells an object: required properties in order, then the
// optional ones, each in order, any of them skipped (llama.cpp's
// _build_object_rule).
func (c *converter) objectRule(props *object, required map[string]bool, name, path string, additional any) string {
	kv := map[string]string{}
	var req, opt []string
	for _, k := range props.keys {
		prop := c.visit(props.vals[k], join(name, k), path+"/properties/"+k)
		kv[k] = c.addRule(join(name, k+"-kv"), formatLiteral(dumpJSON(k))+` space ":" space `+prop)
		if required[k] {
			req = append(req, k)
		} else {
			opt = append(opt, k)
		}
	}
	if additional != nil && additional != false {
		sub := join(name, "additional")
		var value string
		if ao, ok := additional.(*object); ok {
			value = c.visit(ao, sub+"-value", path+"/additionalProperties")
		} else if additional == true {
			value = c.addPrimitive("value", "value")
		} else {
			fail(path, "additionalProperties must be a boolean or a schema")
		}
		var key string
		if len(props.keys) == 0 {
			key = c.addPrimitive("string", "string")
		} else {
			key = c.addRule(sub+"-k", c.notStrings(props.keys, sub+"-k"))
		}
		kv["*"] = c.addRule(sub+"-kv", key+` ":" space `+value)
		opt = append(opt, "*")
	}
	var b strings.Builder
	b.WriteString(`"{" space `)
	for i, k := range req {
		if i > 0 {
			b.WriteString(` "," space `)
		}
		b.WriteString(kv[k])
	}
	if len(opt) > 0 {
		b.WriteString(" (")
		if len(req) > 0 {
			b.WriteString(` "," space ( `)
		}
		// Alternative i is opt[i] then the rest rule of opt[i+1:], which
		// makes each later one optional in turn: rest(j) ::= ( "," space
		// kv[opt[j]] )? rest(j+1). The rest rules are shared by all the
		// alternatives, so they are built once, from the last backwards
		// (the order llama.cpp's recursion adds them in): linear work and
		// grammar, where building each alternative's chain anew was
		// quadratic.
		optional := func(k string) string {
			res := `( "," space ` + kv[k] + ` )`
			if k == "*" {
				return res + "*"
			}
			return res + "?"
		}
		rest := make([]string, len(opt)+1) // rest[j]: the rule for opt[j:], "" past the end
		for j := len(opt) - 1; j >= 1; j-- {
			body := optional(opt[j])
			if rest[j+1] != "" {
				body += " " + rest[j+1]
			}
			rest[j] = c.addRule(join(name, opt[j-1]+"-rest"), body)
		}
		for i, k := range opt {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(kv[k])
			if k == "*" {
				b.WriteString(` ( "," space ` + kv[k] + ` )*`)
			}
			if rest[i+1] != "" {
				b.WriteString(" " + rest[i+1])
			}
		}
		if len(req) > 0 {
			b.WriteString(" )")
		}
		b.WriteString(" )?")
	}
	b.WriteString(` "}" space`)
	return b.String()
}

// notStrings matches any JSON string except the given ones (llama.cpp's
// _not_strings: a trie of the excluded keys, spelled as JSON spells them).
// Unlike llama.cpp's, a prefix of an excluded key is allowed (it is
// another key), the character where a key leaves the trie is an
// unescaped one (so the result is always a JSON string), and the trie is
// built bottom-up without recursion; a subtree nested 16 deep becomes a
// rule of its own (base-N), so long keys stay within the parser's nesting
// limit.
func (c *converter) notStrings(strs []string, base string) string {
	type trie struct {
		kids map[rune]int32
		end  bool
	}
	nodes := []trie{{kids: map[rune]int32{}}}
	for _, s := range strs {
		n := int32(0)
		spelled := dumpJSON(s)
		for _, r := range spelled[1 : len(spelled)-1] {
			k, ok := nodes[n].kids[r]
			if !ok {
				k = int32(len(nodes))
				nodes = append(nodes, trie{kids: map[rune]int32{}})
				nodes[n].kids[r] = k
			}
			n = k
		}
		nodes[n].end = true
	}
	ch := c.addPrimitive("char", "char")
	const maxNest = 16
	expr := make([]string, len(nodes))     // what may follow the node's prefix
	nest := make([]int, len(nodes))        // parentheses nested in expr
	for i := len(nodes) - 1; i >= 0; i-- { // children were created after their parents
		n := &nodes[i]
		if len(n.kids) == 0 {
			expr[i] = ch + "+" // an excluded key ends here: go on
			if !n.end {
				expr[i] = ch + "*"
			}
			continue
		}
		keys := make([]rune, 0, len(n.kids))
		for r := range n.kids {
			keys = append(keys, r)
		}
		slices.Sort(keys)
		var b, rejects strings.Builder
		for j, r := range keys {
			kid := n.kids[r]
			rejects.WriteString(classChar(r))
			if j > 0 {
				b.WriteString(" | ")
			}
			b.WriteString("[" + classChar(r) + "]")
			k := &nodes[kid]
			switch {
			case len(k.kids) > 0:
				opt := ""
				if !k.end {
					opt = "?" // the prefix itself is another key
				}
				if nest[kid]+1 > maxNest {
					b.WriteString(" " + c.addRule(base+"-"+strconv.Itoa(int(kid)), expr[kid]) + opt)
				} else {
					b.WriteString(" (" + expr[kid] + ")" + opt)
					nest[i] = max(nest[i], nest[kid]+1)
				}
			case k.end:
				b.WriteString(" " + ch + "+")
			}
			expr[kid] = "" // used once
		}
		b.WriteString(` | [^"\\\x7F\x00-\x1F` + rejects.String() + `] ` + ch + "*")
		expr[i] = b.String()
	}
	out := `["] ( ` + expr[0] + " )"
	if !nodes[0].end {
		out += "?"
	}
	return out + ` ["] space`
}

// classChar spells r inside a GBNF character class.
func classChar(r rune) string {
	switch r {
	case '\\', ']', '[', '"':
		return `\` + string(r)
	case '^', '-':
		return fmt.Sprintf(`\x%02X`, r) // valid in llama.cpp's parser too
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x20 || r == 0x7F {
		return fmt.Sprintf(`\x%02X`, r)
	}
	return string(r)
}

// formatLiteral quotes s as a GBNF string literal.
func formatLiteral(s string) string {
	r := strings.NewReplacer("\r", `\r`, "\n", `\n`, `"`, `\"`, `\`, `\\`)
	return `"` + r.Replace(s) + `"`
}

// buildRepetition spells item repeated lo..hi times (hi < 0: unbounded),
// separated by sep (llama.cpp's _build_repetition).
func buildRepetition(item string, lo, hi int, sep string) string {
	if hi == 0 {
		return ""
	}
	if lo == 0 && hi == 1 {
		return item + "?"
	}
	if sep == "" {
		switch {
		case lo == 1 && hi < 0:
			return item + "+"
		case lo == 0 && hi < 0:
			return item + "*"
		case hi < 0:
			return fmt.Sprintf("%s{%d,}", item, lo)
		default:
			return fmt.Sprintf("%s{%d,%d}", item, lo, hi)
		}
	}
	restLo := 0
	if lo > 0 {
		restLo = lo - 1
	}
	restHi := hi
	if hi > 0 {
		restHi = hi - 1
	}
	res := item + " " + buildRepetition("("+sep+" "+item+")", restLo, restHi, "")
	if lo == 0 {
		return "(" + res + ")?"
	}
	return res
}
