package explain

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
)

// WriteHTML writes the report as one self-contained page: inline CSS and
// SVG only, no scripts, fonts or other network assets.
func (r *Report) WriteHTML(w io.Writer) error {
	return page.Execute(w, r)
}

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"heatmap":  heatmap,
	"roofline": rooflineSVG,
	"mulf":     func(x float32) float64 { return 300 * float64(x) },
	"mul64":    func(x float64) float64 { return 300 * x },
	"div":      func(x float64, n int) float64 { return x / float64(max(n, 1)) },
	"pct":      func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) },
	"f":        func(format string, x any) string { return fmt.Sprintf(format, x) },
	"bytes":    func(x any) string { return bytesStr(toFloat(x)) },
	"count":    func(x any) string { return count(toFloat(x)) },
	"plain":    plain,
	"quote":    quote,
	"row":      func(a Attention) []float32 { return a.Weights[a.Token] },
	"piece":    func(r *Report, i int) string { return plain(r.Tokens[i].Piece) },
	"ridge":    func(m Machine) float64 { return m.PeakGFLOPS / m.BandwidthGBs },
	"ms":       func(s float64, n int) string { return fmt.Sprintf("%.2f", s/float64(max(n, 1))*1e3) },
	"nonempty": func(s []Token) bool { return len(s) > 0 },
}).Parse(pageHTML))

func toFloat(x any) float64 {
	switch v := x.(type) {
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case float64:
		return v
	}
	return math.NaN()
}

// heatmap draws one head's n×n weights as an SVG grid (masked cells blank).
func heatmap(w [][]float32, title string) template.HTML {
	n := len(w)
	cell := max(4, min(24, 240/max(n, 1)))
	size := n * cell
	var b strings.Builder
	fmt.Fprintf(&b, `<figure><svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img"><title>%s</title>`,
		size+2, size+2, size+2, size+2, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#fafafa" stroke="#ccc"/>`, size+2, size+2)
	for i := range n {
		for j := 0; j <= i; j++ {
			v := float64(w[i][j])
			// White (0) to deep blue (1); sqrt lifts small weights into view.
			t := math.Sqrt(math.Max(0, math.Min(1, v)))
			rr, gg, bb := int(255-t*225), int(255-t*180), int(255-t*60)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="rgb(%d,%d,%d)"><title>q%d→k%d %.4f</title></rect>`,
				1+j*cell, 1+i*cell, cell, cell, rr, gg, bb, i, j, v)
		}
	}
	fmt.Fprintf(&b, `</svg><figcaption>%s</figcaption></figure>`, template.HTMLEscapeString(title))
	return template.HTML(b.String())
}

// rooflineSVG draws the roofs (bandwidth slope, compute ceiling) on log-log
// axes with the prefill and decode points.
func rooflineSVG(c Cost) template.HTML {
	m := c.Machine
	if m.BandwidthGBs <= 0 || m.PeakGFLOPS <= 0 {
		return ""
	}
	const W, H, L, B = 560, 320, 60, 40 // size, left and bottom margins
	x0, x1 := 0.01, 1000.0              // FLOP/byte
	y0, y1 := m.PeakGFLOPS/1e4, m.PeakGFLOPS*4
	px := func(x float64) float64 {
		return L + (math.Log10(x)-math.Log10(x0))/(math.Log10(x1)-math.Log10(x0))*(W-L-10)
	}
	py := func(y float64) float64 {
		return H - B - (math.Log10(y)-math.Log10(y0))/(math.Log10(y1)-math.Log10(y0))*(H-B-10)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img"><title>roofline</title>`, W, H, W, H)
	fmt.Fprintf(&b, `<rect x="%d" y="10" width="%d" height="%d" fill="#fff" stroke="#999"/>`, L, W-L-10, H-B-10)
	for e := math.Ceil(math.Log10(x0)); e <= math.Log10(x1); e++ {
		x := px(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="10" x2="%.1f" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" font-size="11" text-anchor="middle">%g</text>`,
			x, x, H-B, x, H-B+14, math.Pow(10, e))
	}
	for e := math.Ceil(math.Log10(y0)); e <= math.Log10(y1); e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" font-size="11" text-anchor="end">%g</text>`,
			L, y, W-10, y, L-4, y+4, math.Pow(10, e))
	}
	ridge := m.PeakGFLOPS / m.BandwidthGBs
	xs := math.Max(x0, y0/m.BandwidthGBs)
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#c33" stroke-width="2" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`,
		px(xs), py(xs*m.BandwidthGBs), px(ridge), py(m.PeakGFLOPS), px(x1), py(m.PeakGFLOPS))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#c33">%.1f GB/s</text>`, px(ridge/30), py(ridge/30*m.BandwidthGBs)-8, m.BandwidthGBs)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="#c33">%.1f GFLOP/s</text>`, px(ridge)+6, py(m.PeakGFLOPS)-6, m.PeakGFLOPS)
	point := func(name string, intensity, gflops float64, color string) {
		if intensity <= 0 || gflops <= 0 {
			return
		}
		x, y := px(math.Min(math.Max(intensity, x0), x1)), py(math.Min(math.Max(gflops, y0), y1))
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"><title>%s: %.2f FLOP/byte, %.2f GFLOP/s</title></circle>`, x, y, color, name, intensity, gflops)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="12" fill="%s">%s</text>`, x+8, y+4, color, name)
	}
	point("prefill", c.Prefill.Intensity, c.Prefill.GFLOPS, "#26a")
	point("decode", c.Decode.Intensity, c.Decode.GFLOPS, "#2a6")
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" text-anchor="middle">arithmetic intensity (FLOP/byte)</text>`, (W+L)/2, H-6)
	fmt.Fprintf(&b, `<text x="14" y="%d" font-size="12" text-anchor="middle" transform="rotate(-90 14 %d)">GFLOP/s</text>`, (H-B)/2, (H-B)/2)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

const pageHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>loom explain — {{.Model.File}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;color:#222}
h1{font-size:20px} h2{font-size:17px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0} td,th{padding:2px 8px;text-align:right;border-bottom:1px solid #f0f0f0}
td.l,th.l{text-align:left} code,.tok{font-family:ui-monospace,monospace}
.tok{display:inline-block;margin:2px;padding:2px 6px;border:1px solid #bcd;border-radius:4px;background:#f4f8fc}
.tok small{color:#678;margin-left:4px} .special{background:#fdf3e0;border-color:#e0c080}
.bar{display:inline-block;height:10px;background:#4a7fc0;vertical-align:middle}
.heads{display:flex;flex-wrap:wrap;gap:12px} figure{margin:0} figcaption{font-size:12px;color:#555;text-align:center}
.muted{color:#666} .tok.acc,.acc{background:#e4f6e4;border-color:#8c8} .tok.rej,.rej{background:#fbe8e8;border-color:#d99;text-decoration:line-through}
</style></head><body>
<h1>loom explain</h1>
<p><code>{{.Model.File}}</code> — {{.Model.Architecture}}, {{.Model.NLayers}} layers, dim {{.Model.Dim}},
{{.Model.NHeads}} heads ({{.Model.NKVHeads}} KV), head_dim {{.Model.HeadDim}}, FFN {{.Model.FFNDim}},
vocabulary {{.Model.NVocab}}, context {{.Model.CtxLen}}, {{count .Model.Params}} parameters.</p>

<h2>1. Tokens</h2>
<p>{{quote .Prompt}} → {{len .Tokens}} tokens, {{.Chars}} bytes of text.</p>
<p>{{range $i, $t := .Tokens}}<span class="tok{{if $t.Special}} special{{end}}">{{plain $t.Piece}}<small>{{$t.ID}}</small></span>{{end}}</p>

<h2>2. Embeddings and positions</h2>
<p>X = token_embd[ids] has shape [{{.Embedding.Rows}} × {{.Embedding.Cols}}] (tokens × dim).
Row {{.Embedding.Row}} begins <code>{{range .Embedding.Values}}{{f "%.4f" .}} {{end}}…</code>, ‖x‖ = {{f "%.4g" .Embedding.Norm}}.</p>
{{if eq .Positions.Kind "learned"}}<p>Positions: learned, {{.Positions.Style}}.</p>{{else}}<p>Positions: RoPE, base {{.Positions.Base}}, {{.Positions.Dims}} of {{.Positions.HeadDim}} dims per head rotated in {{.Positions.Style}}.</p>{{end}}
<table><tr><th>pos</th><th>pair</th><th>θ (rad/pos)</th><th>angle (rad)</th></tr>
{{range .Positions.Examples}}<tr><td>{{.Pos}}</td><td>{{.Pair}}</td><td>{{f "%.6g" .Theta}}</td><td>{{f "%.6g" .Angle}}</td></tr>{{end}}</table>

<h2>3. Transformer blocks</h2>
<p>{{.Blocks.Count}} blocks, each <code>x += attn({{.Blocks.Norm}}(x)); x += ffn({{.Blocks.Norm}}(x))</code>.
Q {{.Blocks.Q}}, K {{.Blocks.K}}, V {{.Blocks.V}} [tokens, heads, head_dim]. {{.Blocks.Grouping}}.
Mask: {{.Blocks.Mask}}. FFN {{.Model.Dim}} → {{.Blocks.FFNHidden}} → {{.Model.Dim}}, {{.Blocks.Activation}}.</p>
{{range .Blocks.Notes}}<p>{{.}}</p>{{end}}
{{with .Blocks.Experts}}<p>Mixture of experts: {{.Count}} experts of width {{.Hidden}}, {{.Used}} per token; {{.Routing}}.</p>
<table><tr><th>layer</th><th>experts (weight), best first</th></tr>{{range .Chosen}}{{$r := .}}<tr><td>{{.Layer}}</td><td>{{range $i, $e := .Experts}}{{$e}} ({{f "%.3f" (index $r.Weights $i)}}) {{end}}</td></tr>{{end}}</table>{{end}}
<h3>Attention of layer {{.Attention.Layer}}, every head (rows: query tokens, columns: key tokens)</h3>
<div class="heads">{{$l := .Attention.Layer}}{{range $h, $w := .Attention.Heads}}{{heatmap $w (printf "layer %d head %d" $l $h)}}{{end}}</div>
<h3>Token {{.Attention.Token}} {{quote (index .Tokens .Attention.Token).Piece}}, head {{.Attention.Head}}</h3>
<table>{{$r := .}}{{range $j, $w := row .Attention}}<tr><td class="l tok">{{piece $r $j}}</td>
<td class="l"><span class="bar" style="width:{{f "%.0f" (mulf $w)}}px"></span></td><td>{{f "%.3f" $w}}</td></tr>{{end}}</table>
<p>Most attended, averaged over the heads: {{range .Attention.Top}}<span class="tok">{{plain .Piece}}<small>{{f "%.3f" .Weight}}</small></span>{{end}}</p>
<p>Residual stream ‖x‖ of this token: {{range $i, $v := .Residual}}{{if $i}} → {{end}}{{f "%.3g" $v}}{{end}}</p>

<h2>4. Next token</h2>
<p>p = softmax(logits / T), at T = 1 and T = {{.Sampling.Temp}}; top-k {{.Sampling.TopK}}, top-p {{.Sampling.TopP}}.</p>
<table><tr><th>rank</th><th>id</th><th class="l">piece</th><th>logit</th><th>p(T=1)</th><th>p(T={{.Sampling.Temp}})</th><th class="l">kept by</th><th class="l"></th></tr>
{{range .Next}}<tr><td>{{.Rank}}</td><td>{{.ID}}</td><td class="l"><code>{{plain .Piece}}</code></td><td>{{f "%.4f" .Logit}}</td><td>{{f "%.4f" .Prob}}</td><td>{{f "%.4f" .ProbTemp}}</td>
<td class="l">top-k{{if .InTopP}}, top-p{{end}}</td><td class="l"><span class="bar" style="width:{{f "%.0f" (mul64 .Prob)}}px"></span></td></tr>{{end}}</table>
<p>Chosen: <code>{{plain .Sampling.Chosen.Piece}}</code> ({{.Sampling.Chosen.ID}}).
{{if nonempty .Sampling.Generated}}{{len .Sampling.Generated}} decode steps: <code>{{quote .Sampling.Text}}</code>{{end}}</p>
{{with .Speculation}}<h3>Speculative decoding ({{.Mode}})</h3>
<p>{{.Tokens}} tokens in {{len .Steps}} forward passes; {{.Drafted}} tokens drafted, {{.Accepted}} accepted.
<span class="acc">Accepted drafts</span>, the model's own token, <span class="rej">rejected drafts</span>: the output is what decoding without drafts gives, token for token.</p>
<table><tr><th>pass</th><th class="l">tokens</th><th class="l">why</th></tr>
{{range $i, $s := .Steps}}<tr><td>{{$i}}</td><td class="l">{{range $s.Accepted}}<span class="tok acc">{{plain .Piece}}</span>{{end}}{{with $s.Token}}<span class="tok">{{plain .Piece}}</span>{{end}}{{range $s.Rejected}}<span class="tok rej">{{plain .Piece}}</span>{{end}}</td><td class="l muted">{{$s.Why}}</td></tr>
{{end}}</table>{{end}}

<h2>5. KV cache</h2>
<p>Per token: {{.KVCache.Formula}} = {{bytes .KVCache.BytesPerToken}}; at the full context of {{.KVCache.CtxLen}} tokens: {{bytes .KVCache.BytesAtCtx}}.
With one K/V head per query head it would be {{bytes .KVCache.MHABytesPerToken}} per token.</p>

<h2>6. Cost and the roofline</h2>
<p>Machine: {{with .Cost.Machine.CPU}}{{.}}; {{end}}{{f "%.1f" .Cost.Machine.BandwidthGBs}} GB/s, {{f "%.1f" .Cost.Machine.PeakGFLOPS}} GFLOP/s <span class="muted">({{.Cost.Machine.Method}})</span>; ridge at {{f "%.1f" (ridge .Cost.Machine)}} FLOP/byte.</p>
<table><tr><th class="l">phase</th><th>tokens</th><th>ms/token</th><th>tok/s</th><th>FLOPs/token</th><th>bytes/token</th><th>FLOP/byte</th><th>GFLOP/s</th></tr>
<tr><td class="l">prefill</td><td>{{.Cost.Prefill.Tokens}}</td><td>{{ms .Cost.Prefill.Seconds .Cost.Prefill.Tokens}}</td><td>{{f "%.1f" .Cost.Prefill.TokS}}</td><td>{{count (div .Cost.Prefill.FLOPs .Cost.Prefill.Tokens)}}</td><td>{{bytes (div .Cost.Prefill.Bytes .Cost.Prefill.Tokens)}}</td><td>{{f "%.2f" .Cost.Prefill.Intensity}}</td><td>{{f "%.1f" .Cost.Prefill.GFLOPS}}</td></tr>
<tr><td class="l">decode</td><td>{{.Cost.Decode.Tokens}}</td><td>{{ms .Cost.Decode.Seconds .Cost.Decode.Tokens}}</td><td>{{f "%.1f" .Cost.Decode.TokS}}</td><td>{{count .Cost.Decode.FLOPsPerToken}}</td><td>{{bytes .Cost.Decode.BytesPerToken}}</td><td>{{f "%.2f" .Cost.Decode.Intensity}}</td><td>{{f "%.1f" .Cost.Decode.GFLOPS}}</td></tr></table>
{{if .Cost.Decode.Tokens}}<p>Decode is {{.Cost.Decode.Bound}}-bound at its intensity: the roof allows {{f "%.1f" .Cost.Decode.RoofTokS}} tok/s, this run reaches {{pct .Cost.Decode.RoofFraction}}.</p>{{end}}
{{roofline .Cost}}

<h2>7. Where the bytes are</h2>
<table><tr><th class="l">component</th><th>bytes</th><th>share</th><th>tensors</th><th>params</th><th class="l">types</th></tr>
{{range .Weights.Components}}<tr><td class="l">{{.Name}}</td><td>{{bytes .Bytes}}</td><td>{{pct .Share}}</td><td>{{.Tensors}}</td><td>{{count .Params}}</td><td class="l">{{.Types}}</td></tr>{{end}}
<tr><td class="l"><b>total</b></td><td><b>{{bytes .Weights.TotalBytes}}</b></td><td></td><td></td><td></td><td></td></tr></table>
</body></html>
`
