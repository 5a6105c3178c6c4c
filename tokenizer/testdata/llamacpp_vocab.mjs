// Records llama.cpp's view of a GGUF vocabulary for tokenizer tests: its
// end-of-generation set, its special ids, how it renders special tokens,
// and how it tokenizes each text of a corpus (a JSON array of strings) with
// and without special-token parsing (no BOS/EOS: add_special=false).
// CORPUS "-" records the first line only; NAME, if given, is put in it.
// Run from a folder where node-llama-cpp resolves (shared/tools/llamacpp-bench
// copied to /tmp/llamacpp-bench, npm install there):
//   cp tokenizer/testdata/llamacpp_vocab.mjs /tmp/llamacpp-bench/
//   node /tmp/llamacpp-bench/llamacpp_vocab.mjs VOCAB.gguf CORPUS.json [NAME] > OUT.jsonl
import {getLlama} from "node-llama-cpp";
import {readFileSync} from "node:fs";

const [, , modelPath, corpusPath, name] = process.argv;
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, vocabOnly: true});
const t = model.tokens;
const n = model.fileInsights.tokenizer?.tokens?.length ?? model.fileInfo.metadata.tokenizer.ggml.tokens.length;
// llama_vocab_is_eog itself (model.isEogToken also counts EOS and EOT; and
// model.tokens reports BOS/EOS only when they are control tokens, else -1,
// and its shouldPrependBosToken is false without such a BOS: the raw flags are read)
const isEog = (id) => model._model.isEogToken(id);
const eog = [];
const rendered = {};
const types = model.fileInfo.metadata.tokenizer.ggml.token_type ?? [];
for (let id = 0; id < n; id++) {
    if (isEog(id)) eog.push(id);
    // every token that is not normal in the file, and every end token: its text as
    // llama.cpp prints it when special tokens are not rendered
    if ([2, 3, 4, 5].includes(types[id]) || isEog(id))
        rendered[id] = model.detokenize([id], false);
}
console.log(JSON.stringify({...(name ? {file: name} : {}), n, bos: t.bos ?? -1, eos: t.eos ?? -1, eot: t.eot ?? -1,
    addBos: model._model.shouldPrependBosToken(), addEos: model._model.shouldAppendEosToken(), eog, rendered}));
if (corpusPath && corpusPath !== "-") {
    for (const text of JSON.parse(readFileSync(corpusPath, "utf8"))) {
        console.log(JSON.stringify({text, special: Array.from(model.tokenize(text, true)), plain: Array.from(model.tokenize(text, false))}));
    }
}
await model.dispose();
