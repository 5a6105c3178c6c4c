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

// stepCost is the decayed least-squares fit of a pass's seconds to
// x = (1, tokens, attended positions / 1024).
type stepCost struct {
	n   float64
	xx  [3][3]float64
	xy  [3]float64
	set bool
	k   [3]float64
}

func (c *stepCost) add(tokens, attended int, seconds float64) {
	const keep = 0.97
	x := [3]float64{1, float64(tokens), float64(attended) / 1024}
	c.n = keep*c.n + 1
	for i := range 3 {
		for j := range 3 {
			c.xx[i][j] = keep*c.xx[i][j] + x[i]*x[j]
		}
		c.xy[i] = keep*c.xy[i] + x[i]*seconds
	}
	c.set = false
}

// fit solves the normal equations; ok false until the passes seen vary
// enough in tokens and depth, or when a coefficient comes out negative.
func (c *stepCost) fit() ([3]float64, bool) {
	if c.set {
		return c.k, c.k != [3]float64{}
	}
	c.set, c.k = true, [3]float64{}
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
	var k [3]float64
	for r := 2; r >= 0; r-- {
		s := b[r]
		for j := r + 1; j < 3; j++ {
			s -= a[r][j] * k[j]
		}
		k[r] = s / a[r][r]
	}
	if k[0] <= 0 || k[1] < 0 || k[2] < 0 {
		return c.k, false
	}
	c.k = k
	return k, true
}

// attended is the positions a run of n tokens after l cached ones attends
// to: l+1 for the first, …, l+n for the last.
func attended(l, n int) int { return n*l + n*(n+1)/2 }

// chunkRoom is how many tokens of a prompt at depth l fit a step whose
// tokens so far (decode tokens and earlier chunks) cost spent seconds,
// under a limit of limit seconds (at most max; at least 2, so a prefill
// always moves; max itself before the fit is ready).
func (c *stepCost) chunkRoom(l, max int, spent, limit float64) int {
	k, ok := c.fit()
	if !ok {
		return max
	}
	room := limit - spent
	lo, hi := 2, max
	if hi <= lo {
		return hi
	}
	cost := func(n int) float64 { return k[1]*float64(n) + k[2]*float64(attended(l, n))/1024 }
	if cost(hi) <= room {
		return hi
	}
	for lo < hi { // the largest n ≥ 2 within room (cost grows with n)
		m := (lo + hi + 1) / 2
		if cost(m) <= room {
			lo = m
		} else {
			hi = m - 1
		}
	}
	return lo
}
