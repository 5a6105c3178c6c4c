// Records llama.cpp's (node-llama-cpp 3.22.1) embeddings and rank outputs for one modelgen file in
// testdata/reference-embed's format (README.md there). Run it from the folder where node_modules/node-llama-cpp
// is installed (copy it there: it imports node-llama-cpp's internal evaluator classes by relative path):
//
//   cp testdata/reference-embed/record-embed.mjs /tmp/llamacpp-bench/
//   cd /tmp/llamacpp-bench && node record-embed.mjs MODEL.gguf "modelgen -model M -type T -seed 1" > out.jsonl
//
// Four variants are run: flash attention on/off x KV cache F16/F32 (the non-causal models have no KV cache, so the
// KV type changes nothing there). The reference variant (flash attention on, KV F16) is run twice (the second run
// must be identical) and its values are written; the meta line holds, per variant, the largest absolute
// difference and the smallest cosine against it.
import {getLlama, readGgufFileInfo} from "node-llama-cpp";
import {LlamaEmbeddingContext} from "./node_modules/node-llama-cpp/dist/evaluator/LlamaEmbeddingContext.js";
import {LlamaRankingContext} from "./node_modules/node-llama-cpp/dist/evaluator/LlamaRankingContext.js";
import {parseRankingTemplate} from "./node_modules/node-llama-cpp/dist/gguf/insights/GgufInsights.js";

const [, , modelPath, source] = process.argv;
if (!modelPath || !source) {
  console.error('usage: node record-embed.mjs MODEL.gguf "modelgen -model M -type T -seed S"');
  process.exit(2);
}

export const texts = [
  "The quick brown fox jumps over the lazy dog.",
  "Hello",
  "",
  "What is the capital of France?",
  "Crème brûlée, naïve café — 東京タワー! ¿Qué tal? 🙂 (x+y)^2 = x² + 2xy + y²; e-mail: a.b@c.org #tag",
  "buffalo buffalo buffalo buffalo buffalo buffalo buffalo buffalo buffalo buffalo buffalo buffalo",
  "  Leading and trailing spaces,\n\ttabs and\nnew lines.  ",
  "Embeddings map text to vectors so that similar meanings lie close together. A search system embeds every " +
    "document once, stores the vectors in an index, and at query time embeds the question and returns the " +
    "nearest documents by cosine similarity. Rerankers then read each query and candidate document together " +
    "and score how well the document answers the query, which is slower but more accurate than comparing " +
    "two independent vectors, so they are applied only to the top results of the first stage.",
];

export const pairs = [
  ["What is the capital of France?", "Paris is the capital and largest city of France."],
  ["What is the capital of France?", "The Great Wall of China is thousands of kilometres long."],
  ["how to bake bread", "Mix flour, water, yeast and salt; knead, let it rise, then bake at 220°C for 30 minutes."],
  ["how to bake bread", "Bread"],
  ["python list comprehension", "squares = [x*x for x in range(10)] builds a list in one expression."],
  ["¿Dónde está la biblioteca?", "La biblioteca está en la calle principal, junto al museo. Abre a las nueve."],
];

const variants = [
  {name: "fa1-kvF16", fa: true, kv: "F16"}, // reference
  {name: "fa0-kvF16", fa: false, kv: "F16"},
  {name: "fa1-kvF32", fa: true, kv: "F32"},
  {name: "fa0-kvF32", fa: false, kv: "F32"},
];

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
const info = await readGgufFileInfo(modelPath);
const arch = info.metadata.general.architecture;
const am = info.metadata[arch] ?? {};
const poolingNames = {0: "none", 1: "mean", 2: "cls", 3: "last", 4: "rank"};
const pooling = poolingNames[am.pooling_type] ?? "none";
const rank = pooling === "rank";
const template = parseRankingTemplate(info.metadata.tokenizer?.["chat_template.rerank"]);

const f32 = (x) => Number(Math.fround(x).toPrecision(9)); // round-trips a float32
const ctxOptions = (v, extra) => ({contextSize: 512, batchSize: 512, threads: 2, flashAttention: v.fa,
  experimentalKvCacheKeyType: v.kv, experimentalKvCacheValueType: v.kv, ...extra});

async function runEmbed(v) {
  const ctx = await model.createContext(ctxOptions(v, {_embeddings: true}));
  const ec = new LlamaEmbeddingContext({_llamaContext: ctx});
  const out = [];
  for (const text of texts) {
    // node's getEmbeddingFor: tokenize without special-token parsing, then _prepareInput adds what
    // llama_tokenize(add_special) would (BOS / [CLS] first, EOS / [SEP] last). For the empty text node's public API
    // returns [] without evaluating anything; here the special tokens alone are evaluated, as llama.cpp's
    // llama-embedding / server do.
    const tokens = model.tokenize(text);
    ec._prepareInput(tokens);
    const e = await ec.getEmbeddingFor(tokens); // raw llama_get_embeddings_seq: node does not normalize
    out.push({kind: "embed", text, tokens, embedding: e.vector.map(f32)});
  }
  await ec.dispose();
  return out;
}

async function runRank(v) {
  const ctx = await model.createContext(ctxOptions(v, {_embeddings: true, _ranking: true}));
  const rc = new LlamaRankingContext({_llamaContext: ctx, _template: template});
  const out = [];
  for (const [query, document] of pairs) {
    const tokens = rc._getEvaluationInput(model.tokenize(query, false, "trimLeadingSpace"),
      model.tokenize(document, false, "trimLeadingSpace"));
    const score = await rc.rank(query, document);
    // after rank() the context still holds the sequence's pooled output: all n_cls_out values
    const raw = Array.from(ctx._ctx.getEmbedding(tokens.length));
    const rec = {kind: "rank", query, document, tokens, raw: raw.map(f32), score: f32(score)};
    if (template != null) {
      // llama-server (format_prompt_rerank) substitutes the texts into the template and tokenizes the whole string
      // (parse_special, no BOS/EOS added); node tokenizes the template's pieces, the query and the document
      // separately, so the token boundaries around {query} / {document} differ. Record that input too.
      const serverTokens = model.tokenize(template.replace("{{query}}", query).replace("{{document}}", document), true);
      if (JSON.stringify(serverTokens) !== JSON.stringify(tokens)) {
        const serverScore = await rc._evaluateRankingForInput(serverTokens);
        const serverRaw = Array.from(ctx._ctx.getEmbedding(serverTokens.length));
        Object.assign(rec, {server_tokens: serverTokens, server_raw: serverRaw.map(f32), server_score: f32(serverScore)});
      }
    }
    out.push(rec);
  }
  await rc.dispose();
  return out;
}

const run = rank ? runRank : runEmbed;
const results = {};
for (const v of variants) results[v.name] = await run(v);
const repeat = await run(variants[0]);

const vec = (r) => (r.kind === "embed" ? r.embedding : r.raw);
function compare(a, b) {
  let maxAbs = 0, minCos = 1, maxScore = 0;
  for (let i = 0; i < a.length; i++) {
    if (JSON.stringify(a[i].tokens) !== JSON.stringify(b[i].tokens)) throw new Error(`tokens differ on line ${i}`);
    const x = vec(a[i]), y = vec(b[i]);
    let dot = 0, nx = 0, ny = 0;
    for (let j = 0; j < x.length; j++) {
      maxAbs = Math.max(maxAbs, Math.abs(x[j] - y[j]));
      dot += x[j] * y[j]; nx += x[j] * x[j]; ny += y[j] * y[j];
    }
    if (x.length > 1) minCos = Math.min(minCos, dot / Math.sqrt(nx * ny));
    if (a[i].kind === "rank") maxScore = Math.max(maxScore, Math.abs(a[i].score - b[i].score));
  }
  const r = {max_abs: +maxAbs.toPrecision(4)};
  if (!rank) r.min_cos = +minCos.toFixed(9);
  else r.max_score = +maxScore.toPrecision(4);
  return r;
}
const ref = results[variants[0].name];
const same = JSON.stringify(ref) === JSON.stringify(repeat);
if (!same) throw new Error("the reference variant is not deterministic");
for (const r of ref) for (const x of vec(r)) if (!Number.isFinite(x)) throw new Error("non-finite output");

const variantsMeta = {};
for (const v of variants) variantsMeta[v.name] = {flash_attention: v.fa, kv_type: v.kv, ...compare(ref, results[v.name])};
variantsMeta[variants[0].name].reference = true;

// sanity: how distinct are the outputs of different inputs
let maxCosPair = -1;
if (!rank) {
  const vs = ref.filter((r) => r.embedding.length > 0).map((r) => r.embedding);
  for (let i = 0; i < vs.length; i++) for (let j = i + 1; j < vs.length; j++) {
    let dot = 0, ni = 0, nj = 0;
    for (let k = 0; k < vs[i].length; k++) { dot += vs[i][k] * vs[j][k]; ni += vs[i][k] ** 2; nj += vs[j][k] ** 2; }
    maxCosPair = Math.max(maxCosPair, dot / Math.sqrt(ni * nj));
  }
}

const meta = {
  kind: "meta", model: source.split(/\s+/)[2] + " " + source.split(/\s+/)[4], source, arch, pooling,
  n_out: vec(ref[0]).length,
  recorded_with: "llama.cpp v0.5.0 via node-llama-cpp 3.22.1 (CPU, 2 threads, context 512, batch 512)",
  reference_variant: variants[0].name, repeat_identical: same,
  ...(rank ? {rank_template: template ?? null, score: arch === "qwen3" ? "raw[0] (softmax already applied by llama.cpp)" : "sigmoid(raw[0])"}
    : {max_cos_between_inputs: +maxCosPair.toFixed(6)}),
  variants: variantsMeta,
};
console.log([meta, ...ref].map((x) => JSON.stringify(x)).join("\n"));
await model.dispose();
