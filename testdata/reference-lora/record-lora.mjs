// Like record.mjs, with LoRA adapters on the context.
// usage: node record-lora.mjs MODEL.gguf TOKENS_JSON N_GEN FLASH(0|1) KVTYPE(F16|F32) ADAPTER[:SCALE]...
import {getLlama} from "node-llama-cpp";
const [, , modelPath, toksJson, nGen = "16", fa = "0", kv = "F16", ...ads] = process.argv;
const toks = JSON.parse(toksJson);
const adapters = ads.map((a) => { const i = a.lastIndexOf(":"); return i > 0 && !isNaN(+a.slice(i + 1)) ? {filePath: a.slice(0, i), scale: +a.slice(i + 1)} : {filePath: a, scale: 1}; });
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
const ctx = await model.createContext({contextSize: 512, threads: 2, batchSize: 512, flashAttention: fa === "1",
  experimentalKvCacheKeyType: kv, experimentalKvCacheValueType: kv, lora: {adapters}});
const seq = ctx.getSequence();
const line = (kind, pos, token, logits) => {
  const arr = Array.from(logits.entries());
  let m = -Infinity; for (const [, v] of arr) if (v > m) m = v;
  let s = 0; for (const [, v] of arr) s += Math.exp(v - m);
  const lse = m + Math.log(s);
  arr.sort((a, b) => b[1] - a[1]);
  return JSON.stringify({kind, pos, token, lse: +lse.toFixed(6), top: arr.slice(0, 10).map(([id, v]) => [id, +v.toFixed(6)])});
};
const res = await seq.controlledEvaluate(toks.map((t) => [t, {generateNext: {logits: true}}]));
const out = [JSON.stringify({kind: "prompt", n_vocab: res[0].next.logits.size, tokens: toks})];
let last;
res.forEach((r, i) => { out.push(line("tf", i, toks[i], r.next.logits)); last = r.next.logits; });
out.push(JSON.stringify({kind: "gen_start"}));
let pos = toks.length;
for (let s = 0; s < Number(nGen); s++) {
  let best = -1, bv = -Infinity; for (const [id, v] of last.entries()) if (v > bv) { bv = v; best = id; }
  out.push(JSON.stringify({kind: "gen", step: s, token: best, piece: model.detokenize([best])}));
  const r = await seq.controlledEvaluate([[best, {generateNext: {logits: true}}]]);
  last = r[0].next.logits;
  out.push(line("gtop", pos, best, last)); pos++;
}
console.log(out.join("\n"));
await ctx.dispose(); await model.dispose();
