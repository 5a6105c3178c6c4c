package engine

import (
	"iter"
	"strings"
	"sync"
	"time"
)

// TokenEvent is one generated token as a stream delivers it.
type TokenEvent struct {
	ID   int32
	Text string // text this token releases: empty while a UTF-8 character or a possible stop string is incomplete
	// Logprob is log p(ID) under the model's distribution (softmax of the raw
	// logits), and Top the most likely tokens, when the request asked.
	Logprob float32
	Top     []TokenLogprob
	At      time.Time // when the scheduler produced it
	// Speculative decoding: Drafted says the drafter proposed this token
	// and the model took it (a forward pass saved); Rejected, on the token
	// that ended a verification, are the proposals not taken (the first
	// is the one this token replaced; empty when every proposal was taken).
	Drafted  bool
	Rejected []int32
}

// TokenLogprob is a token and its log-probability.
type TokenLogprob struct {
	ID      int32
	Logprob float32
}

// Stream delivers one generation's tokens. The scheduler never waits for a
// reader: events queue in the stream until read.
type Stream struct {
	Index int // choice index among a request's N

	mu     sync.Mutex
	events []TokenEvent
	done   bool
	res    Result
	notify chan struct{} // one pending wake-up
}

func newStream(i int) *Stream { return &Stream{Index: i, notify: make(chan struct{}, 1)} }

func (s *Stream) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *Stream) push(ev TokenEvent) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	s.wake()
}

func (s *Stream) finish(r Result) {
	s.mu.Lock()
	if !s.done {
		s.done, s.res = true, r
	}
	s.mu.Unlock()
	s.wake()
}

// Next returns the next token, waiting for it; false once the generation
// has finished and every token was read.
func (s *Stream) Next() (TokenEvent, bool) {
	for {
		s.mu.Lock()
		if len(s.events) > 0 {
			ev := s.events[0]
			s.events[0] = TokenEvent{}
			s.events = s.events[1:]
			s.mu.Unlock()
			return ev, true
		}
		if s.done {
			s.mu.Unlock()
			return TokenEvent{}, false
		}
		s.mu.Unlock()
		<-s.notify
	}
}

// Events yields the tokens as Next returns them, until the generation has
// finished and every token was read (then Result has the statistics).
func (s *Stream) Events() iter.Seq[TokenEvent] {
	return func(yield func(TokenEvent) bool) {
		for {
			ev, ok := s.Next()
			if !ok || !yield(ev) {
				return
			}
		}
	}
}

// Result waits for the generation to finish and returns its statistics
// (the unread tokens stay readable).
func (s *Stream) Result() Result {
	for {
		s.mu.Lock()
		if s.done {
			r := s.res
			s.mu.Unlock()
			return r
		}
		s.mu.Unlock()
		<-s.notify
		s.wake() // Next may be waiting too
	}
}

// Collect reads the whole stream: the text and the token ids.
func (s *Stream) Collect() (string, []int32, Result) {
	var b strings.Builder
	var ids []int32
	for ev := range s.Events() {
		b.WriteString(ev.Text)
		if ev.ID >= 0 {
			ids = append(ids, ev.ID)
		}
	}
	return b.String(), ids, s.Result()
}

// stopFilter releases generated text while holding back any tail that may
// be the start of a stop string, so a stop string is never streamed, not
// even in part. Each stop string is matched as a stream (Knuth–Morris–Pratt),
// so a token costs time linear in its text whatever the stop strings'
// lengths (a suffix-by-suffix search cost their square per token).
type stopFilter struct {
	stops []string
	held  string
	fail  [][]int // per stop: KMP failure function, built on first use
	state []int   // per stop: longest prefix of it that ends the text so far
}

// add appends text and returns what can be released, and whether a stop
// string was found (text after it is dropped).
func (f *stopFilter) add(text string) (string, bool) {
	if len(f.stops) == 0 {
		return text, false
	}
	if f.fail == nil {
		f.fail = make([][]int, len(f.stops))
		f.state = make([]int, len(f.stops))
		for i, s := range f.stops {
			f.fail[i] = kmpFailure(s)
		}
	}
	base := len(f.held)
	f.held += text
	cut := -1
	for i, s := range f.stops {
		if s == "" {
			cut = 0
			continue
		}
		st, fail := f.state[i], f.fail[i]
		for j := 0; j < len(text); j++ {
			c := text[j]
			for st > 0 && s[st] != c {
				st = fail[st-1]
			}
			if s[st] == c {
				st++
			}
			if st == len(s) {
				// The first occurrence of this stop string: where it starts.
				if start := base + j + 1 - len(s); cut < 0 || start < cut {
					cut = start
				}
				break
			}
		}
		f.state[i] = st
	}
	if cut >= 0 {
		out := f.held[:cut]
		f.held = ""
		clear(f.state)
		return out, true
	}
	// Keep the longest suffix that is a proper prefix of a stop string.
	keep := 0
	for _, st := range f.state {
		keep = max(keep, st)
	}
	keep = min(keep, len(f.held))
	out := f.held[:len(f.held)-keep]
	f.held = f.held[len(f.held)-keep:]
	return out, false
}

// kmpFailure is s's failure function: fail[i] is the length of the longest
// proper prefix of s[:i+1] that is also its suffix.
func kmpFailure(s string) []int {
	fail := make([]int, len(s))
	k := 0
	for i := 1; i < len(s); i++ {
		for k > 0 && s[i] != s[k] {
			k = fail[k-1]
		}
		if s[i] == s[k] {
			k++
		}
		fail[i] = k
	}
	return fail
}

// flush releases what is held at the end of generation.
func (f *stopFilter) flush() string {
	out := f.held
	f.held = ""
	return out
}
