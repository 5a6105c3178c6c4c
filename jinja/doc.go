// Package jinja renders Jinja2 chat templates as Hugging Face
// transformers does (Python Jinja2's ImmutableSandboxedEnvironment with
// trim_blocks, lstrip_blocks and loop controls, plus transformers'
// tojson, raise_exception and strftime_now), byte for byte.
//
// Every built-in filter, test and global of Jinja2 3.1's sandbox is
// here; testdata/jinja2_cases.py records what Python renders for each,
// and the tests replay it. Template text is read as Jinja2 reads it:
// \r\n and \r become \n and one trailing newline is dropped. Strings
// follow CPython's Unicode rules: full case mappings and final sigma in
// upper, lower, title, capitalize, swapcase and casefold, and the
// character classes of the is… methods and of repr by the properties
// CPython uses (unicode_tables.go, generated from Python's unicodedata).
//
// Where Python and Loom part: integers are 64-bit, and a result that does
// not fit fails instead of growing (Python's are unbounded); there are no
// complex numbers, no bytes (str.encode) and no list.pop (lists are
// immutable).
//
// Templates and their variables are untrusted. Parsing bounds nesting
// (a *LimitError with Limit "MaxNesting"), and each render has one budget
// (Template.Limits): bytes of values created, steps of work, output size
// and call depth. A render that goes over fails with a *LimitError, which
// errors.Is(err, ErrLimit) recognizes; other template failures are
// *Error.
package jinja
