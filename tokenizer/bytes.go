package tokenizer

// GPT-2's byte-level alphabet: printable bytes stand for themselves, the rest
// are shifted to U+0100 and up, so every byte string is a string of
// visible runes (bytes_to_unicode in OpenAI's encoder.py).
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
)

func init() {
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteEncode maps raw bytes to their byte-level rune text.
func byteEncode(s string) string {
	out := make([]rune, 0, len(s))
	for i := 0; i < len(s); i++ {
		out = append(out, byteToRune[s[i]])
	}
	return string(out)
}

// byteDecode maps byte-level text back to bytes; runes outside the alphabet
// are kept as their UTF-8.
func byteDecode(dst []byte, s string) []byte {
	for _, r := range s {
		if b, ok := runeToByte[r]; ok {
			dst = append(dst, b)
		} else {
			dst = append(dst, string(r)...)
		}
	}
	return dst
}
