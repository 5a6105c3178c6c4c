package engine

import "math"

// Latency-bounded prompt chunks (Options.ChunkLatency): a prompt chunk
// beside decoding sequences costs their next token time, and the cost of a
// chunk grows with its depth (every chunk token attends to every position
// before it). With the option set, the scheduler fits a forward pass's
// time as c0 + c1·tokens + c2·attended positions from the passes it runs,
// and cuts each step's prompt chunks so the step is predicted to take at
// most ChunkLatency times the decode-only step: the running streams'
// inter-token latency stays within that factor while a long prompt
// prefills (which takes longer), at any depth.

// stepCost prices a pass in two parts, each fitted (decayed least
// squares) to what explains it: the time in attention, which the runner
// measures, as a0 + a1·tokens + a2·attended/1024 (every token has its
// fixed share of work besides the positions it reads: measured, about
// 0.2 ms per token beside 0.6 ms per 1024 positions on qwen2.5-0.5b), and
// the rest as r0 + r1·tokens. One fit of the whole time to both could not
// tell them apart: at a given depth every step's prompt chunk attends to
// about as many positions, so the depth term melted into the fixed cost
// (over a 16,384-token prefill the fixed cost so fitted rose from 11 to
// 48 ms, and with it the limit, a multiple of the decode-only step it
// predicted).
type stepCost struct {
	rest costModel // seconds outside attention by tokens
	attn plane     // attention seconds by (1, tokens, attended/1024)
}

func (c *stepCost) add(tokens, attended int, seconds, attnSeconds float64) {
	attnSeconds = min(max(attnSeconds, 0), seconds)
	c.rest.addX(float64(tokens), seconds-attnSeconds)
	c.attn.add([3]float64{1, float64(tokens), float64(attended) / 1024}, attnSeconds)
}

// fit is the pass's time as k[0] + k[1]·tokens + k[2]·attended/1024; ok
// false until both parts are fitted (the passes seen vary in tokens and in
// depth) and the fixed cost is positive. A slope that comes out negative
// (noise about zero) counts as zero.
func (c *stepCost) fit() ([3]float64, bool) {
	r0, r1, okR := c.rest.line()
	a, okA := c.attn.fit()
	k := [3]float64{r0 + a[0], max(r1+a[1], 0), max(a[2], 0)}
	if !okR || !okA || k[0] <= 0 {
		return [3]float64{}, false
	}
	return k, true
}

// plane is a decayed least-squares fit of y to x = (1, x1, x2).
type plane struct {
	n   float64
	xx  [3][3]float64
	xy  [3]float64
	set bool
	k   [3]float64
	ok  bool
}

func (c *plane) add(x [3]float64, y float64) {
	const keep = 0.98
	c.n = keep*c.n + 1
	for i := range 3 {
		for j := range 3 {
			c.xx[i][j] = keep*c.xx[i][j] + x[i]*x[j]
		}
		c.xy[i] = keep*c.xy[i] + x[i]*y
	}
	c.set = false
}

// fit solves the normal equations; ok false until 12 passes whose x vary
// enough to separate the three.
func (c *plane) fit() ([3]float64, bool) {
	if c.set {
		return c.k, c.ok
	}
	c.set, c.k, c.ok = true, [3]float64{}, false
	if c.n < 12 {
		return c.k, false
	}
	a, b := c.xx, c.xy
	for col := range 3 { // Gaussian elimination with partial pivoting
		p := col
		for r := col + 1; r < 3; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[p][col]) {
				p = r
			}
		}
		if math.Abs(a[p][col]) < 1e-12*c.n {
			return c.k, false
		}
		a[col], a[p], b[col], b[p] = a[p], a[col], b[p], b[col]
		for r := col + 1; r < 3; r++ {
			f := a[r][col] / a[col][col]
			for j := col; j < 3; j++ {
				a[r][j] -= f * a[col][j]
			}
			b[r] -= f * b[col]
		}
	}
	for r := 2; r >= 0; r-- {
		s := b[r]
		for j := r + 1; j < 3; j++ {
			s -= a[r][j] * c.k[j]
		}
		c.k[r] = s / a[r][r]
	}
	c.ok = true
	return c.k, true
}

// attended is the positions a run of n tokens after l cached ones attends
// to: l+1 for the first, …, l+n for the last.
func attended(l, n int) int { return n*l + n*(n+1)/2 }

// chunkRoom is how many tokens of a prompt at depth l fit a step whose
// tokens so far (decode tokens and earlier chunks) cost spent seconds,
// under a limit of limit seconds (at most max; at least 1, so a prefill
// always moves; max itself before the fit is ready). Deep in a long
// prompt one token's attention may take a decode step's time by itself
// (qwen2.5-0.5b at 16k: 12.6 ms against a 30 ms step of eight streams),
// so the floor is one token, not two.
func (c *stepCost) chunkRoom(l, max int, spent, limit float64) int {
	k, ok := c.fit()
	if !ok {
		return max
	}
	room := limit - spent
	lo, hi := 1, max
	if hi <= lo {
		return hi
	}
	cost := func(n int) float64 { return k[1]*float64(n) + k[2]*float64(attended(l, n))/1024 }
	if cost(hi) <= room {
		return hi
	}
	for lo < hi { // the largest n ≥ 1 within room (cost grows with n)
		m := (lo + hi + 1) / 2
		if cost(m) <= room {
			lo = m
		} else {
			hi = m - 1
		}
	}
	return lo
}

// unfitCap is a step's prompt-chunk tokens beside dec decoding tokens
// before the cost fit is ready (the passes seen do not yet separate the
// per-token cost from the per-position one, as while only short prompts
// run): (factor−1)·dec, at least 2, the share that keeps the step within
// factor times the decode-only step where a token costs about the same in
// a chunk as in decode — at a shallow depth, which is where the fit is
// not ready yet (every chunk deeper in a prompt gives it positions).
func unfitCap(dec int, factor float64) int {
	return max(2, int(float64(dec)*(factor-1)))
}
