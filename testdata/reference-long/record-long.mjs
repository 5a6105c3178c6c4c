// Records llama.cpp's (node-llama-cpp 3.22.1) teacher-forced logits over a long prompt, in shared/reference's
// format. It is ../reference-hybrid/record-long.mjs with four changes: the context size is an argument
// (CTX; the batch holds the whole prompt, so the prompt is one batch as in every other recording); the K
// and V cache types are separate arguments (F32, F16, Q8_0, Q4_0: node-llama-cpp's
// experimentalKvCacheKeyType / experimentalKvCacheValueType; llama.cpp needs flash attention for a
// quantized V cache); with THIN=1 only the positions the committed files keep ask for logits (p % 16 == 0
// and the last 64: reading a 151,936-entry logit map per position costs ~0.2 s in the wrapper); and the
// threads are an argument (default 2).
// usage (from a folder where node_modules/node-llama-cpp resolves, e.g. /tmp/llamacpp-bench):
//   node record-long.mjs MODEL.gguf TEXT_FILE NTOK N_GEN FLASH(0|1) KTYPE VTYPE CTX [THIN(0|1)] [THREADS]
import {readFileSync} from "node:fs";
import {getLlama} from "node-llama-cpp";
const [, , modelPath, textPath, nTok, nGen = "4", fa = "0", kt = "F16", vt = "F16", ctxSize = "4608", thin = "0", threads = "2"] = process.argv;
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
const t = model.tokens;
const text = readFileSync(textPath, "utf8");
const all = [...(t.shouldPrependBosToken ? [t.bos] : []), ...model.tokenize(text, false)];
if (all.length < Number(nTok)) throw new Error(`${textPath} gives ${all.length} tokens, want ${nTok}`);
const toks = all.slice(0, Number(nTok));
const n = toks.length;
const ctx = await model.createContext({contextSize: Number(ctxSize), threads: Number(threads), batchSize: n,
  flashAttention: fa === "1", experimentalKvCacheKeyType: kt, experimentalKvCacheValueType: vt});
const seq = ctx.getSequence();
const keep = (p) => thin !== "1" || p % 16 === 0 || p >= n - 64;
const line = (kind, pos, token, logits) => {
  const arr = Array.from(logits.entries());
  let m = -Infinity; for (const [, v] of arr) if (v > m) m = v;
  let s = 0; for (const [, v] of arr) s += Math.exp(v - m);
  const lse = m + Math.log(s);
  arr.sort((a, b) => b[1] - a[1]);
  return JSON.stringify({kind, pos, token, lse: +lse.toFixed(6), top: arr.slice(0, 10).map(([id, v]) => [id, +v.toFixed(6)])});
};
const tf = new Array(n);
let nVocab = 0, lastArgmax = -1;
const argmax = (logits) => { let best = -1, bv = -Infinity; for (const [id, v] of logits.entries()) if (v > bv) { bv = v; best = id; } return best; };
await seq.controlledEvaluate(toks.map((tok, i) => keep(i) ? [tok, {generateNext: {logits: true}}] : tok), {
  onTokenResult(i, r) {
    if (!r.next || !r.next.logits) return;
    nVocab = r.next.logits.size;
    tf[i] = line("tf", i, toks[i], r.next.logits);
    if (i === n - 1) lastArgmax = argmax(r.next.logits);
    delete r.next.logits;
  },
});
for (let i = 0; i < n; i++) if (keep(i) && tf[i] === undefined) throw new Error(`missing teacher-forced position ${i}`);
const out = [JSON.stringify({kind: "prompt", n_vocab: nVocab, tokens: toks}), ...tf.filter((l) => l !== undefined), JSON.stringify({kind: "gen_start"})];
let pos = n, next = lastArgmax;
for (let s = 0; s < Number(nGen); s++) {
  out.push(JSON.stringify({kind: "gen", step: s, token: next, piece: model.detokenize([next])}));
  const r = await seq.controlledEvaluate([[next, {generateNext: {logits: true}}]]);
  out.push(line("gtop", pos, next, r[0].next.logits)); pos++;
  next = argmax(r[0].next.logits);
}
console.log(out.join("\n"));
await ctx.dispose(); await model.dispose();
