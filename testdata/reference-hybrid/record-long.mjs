// Records llama.cpp's (node-llama-cpp) teacher-forced logits over a long prompt, in shared/reference's
// format, for the 512-token recordings of testdata/reference-hybrid. It is record.mjs
// (shared/tools/llamacpp-bench) with three changes: it tokenizes a text file itself (as tokenize.mjs
// does: add_special=true, no special-token parsing) and keeps the first NTOK tokens; the context holds
// 1024 tokens (record.mjs: 512, too small for 512 prompt tokens plus greedy steps); and each position's
// line is written as soon as its logits arrive and the logits are then dropped (holding 512 full
// 151,936-entry logit maps at once does not fit in memory).
// usage (from a folder where node_modules/node-llama-cpp resolves, e.g. /tmp/llamacpp-bench):
//   node record-long.mjs MODEL.gguf TEXT_FILE NTOK N_GEN FLASH(0|1) KVTYPE(F16|F32)
import {readFileSync} from "node:fs";
import {getLlama} from "node-llama-cpp";
const [, , modelPath, textPath, nTok = "512", nGen = "4", fa = "0", kv = "F16"] = process.argv;
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
const t = model.tokens;
const text = readFileSync(textPath, "utf8");
const all = [...(t.shouldPrependBosToken ? [t.bos] : []), ...model.tokenize(text, false)];
if (all.length < Number(nTok)) throw new Error(`${textPath} gives ${all.length} tokens, want ${nTok}`);
const toks = all.slice(0, Number(nTok));
const ctx = await model.createContext({contextSize: 1024, threads: 2, batchSize: 512, flashAttention: fa === "1",
  experimentalKvCacheKeyType: kv, experimentalKvCacheValueType: kv});
const seq = ctx.getSequence();
const line = (kind, pos, token, logits) => {
  const arr = Array.from(logits.entries());
  let m = -Infinity; for (const [, v] of arr) if (v > m) m = v;
  let s = 0; for (const [, v] of arr) s += Math.exp(v - m);
  const lse = m + Math.log(s);
  arr.sort((a, b) => b[1] - a[1]);
  return JSON.stringify({kind, pos, token, lse: +lse.toFixed(6), top: arr.slice(0, 10).map(([id, v]) => [id, +v.toFixed(6)])});
};
const tf = new Array(toks.length);
let nVocab = 0, lastArgmax = -1;
const argmax = (logits) => { let best = -1, bv = -Infinity; for (const [id, v] of logits.entries()) if (v > bv) { bv = v; best = id; } return best; };
await seq.controlledEvaluate(toks.map((tok) => [tok, {generateNext: {logits: true}}]), {
  onTokenResult(i, r) {
    nVocab = r.next.logits.size;
    tf[i] = line("tf", i, toks[i], r.next.logits);
    if (i === toks.length - 1) lastArgmax = argmax(r.next.logits);
    delete r.next.logits;
  },
});
if (tf.some((l) => l === undefined)) throw new Error("missing teacher-forced positions");
const out = [JSON.stringify({kind: "prompt", n_vocab: nVocab, tokens: toks}), ...tf, JSON.stringify({kind: "gen_start"})];
let pos = toks.length, next = lastArgmax;
for (let s = 0; s < Number(nGen); s++) {
  out.push(JSON.stringify({kind: "gen", step: s, token: next, piece: model.detokenize([next])}));
  const r = await seq.controlledEvaluate([[next, {generateNext: {logits: true}}]]);
  out.push(line("gtop", pos, next, r[0].next.logits)); pos++;
  next = argmax(r[0].next.logits);
}
console.log(out.join("\n"));
await ctx.dispose(); await model.dispose();
