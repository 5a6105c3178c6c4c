// Package defaultmodel embeds the tiny model Loom runs when no model is
// given: TinyStories-656K Q8_0 (Apache-2.0; see NOTICE).
package defaultmodel

import _ "embed"

// Name is the embedded file's name.
const Name = "TinyStories-656K-Q8_0.gguf"

// GGUF is the embedded file.
//
//go:embed TinyStories-656K-Q8_0.gguf
var GGUF []byte
