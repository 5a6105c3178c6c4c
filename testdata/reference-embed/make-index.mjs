// Writes index.tsv from the recordings in this folder (run it here: node make-index.mjs > index.tsv).
// The model files' sha256 are read from FILE.sha256 beside each model, or passed as SHA_<file>=... ; simplest:
//   node make-index.mjs /tmp/emb   (a folder holding M-T.gguf for every recording)
// Tolerances follow llama.cpp's own variants (README.md): abs_tol = max(1.5 x the largest max_abs, 0.002),
// min_cos = 1 - max(1.5 x (1 - the smallest min_cos), 1e-6), score_tol = max(1.5 x the largest max_score, 0.001).
import {readFileSync, readdirSync} from "node:fs";
import {createHash} from "node:crypto";
import {join} from "node:path";

const models = process.argv[2];
const rows = [["file", "model", "source", "sha256", "pooling", "n_out", "abs_tol", "min_cos", "score_tol", "recorded_with"]];
for (const f of readdirSync(".").filter((f) => f.startsWith("modelgen-") && f.endsWith(".jsonl")).sort()) {
  const meta = JSON.parse(readFileSync(f, "utf8").split("\n")[0]);
  const [, , m, , t] = meta.source.split(/\s+/);
  const sha = createHash("sha256").update(readFileSync(join(models, `${m}-${t}.gguf`))).digest("hex");
  let maxAbs = 0, minCos = 1, maxScore = 0;
  for (const v of Object.values(meta.variants)) {
    maxAbs = Math.max(maxAbs, v.max_abs);
    if (v.min_cos != null) minCos = Math.min(minCos, v.min_cos);
    if (v.max_score != null) maxScore = Math.max(maxScore, v.max_score);
  }
  const absTol = Math.max(1.5 * maxAbs, 0.002);
  const cos = 1 - Math.max(1.5 * (1 - minCos), 1e-6);
  const scoreTol = meta.pooling === "rank" ? Math.max(1.5 * maxScore, 0.001).toPrecision(3) : "";
  rows.push([f, meta.model, meta.source, sha, meta.pooling, meta.n_out, absTol.toPrecision(3),
    meta.pooling === "rank" ? "" : cos.toFixed(6), scoreTol, meta.recorded_with.split(" (")[0]]);
}
console.log(rows.map((r) => r.join("\t")).join("\n"));
