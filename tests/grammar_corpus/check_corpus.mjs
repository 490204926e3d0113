// ctest grammar.corpus: every schema in tests/data/schemas/ must compile, and
// for seeds 1..10 the output grammar_sample draws (random logits through the
// grammar mask) must be JSON that the schema accepts (ajv: draft 2020-12 for
// schemas that say so or name no draft, draft-07 for those that say draft-07;
// ajv-formats for "format"). Fails listing every schema and seed that failed
// and why.
//
//   node tests/grammar_corpus/check_corpus.mjs build/release/tests/grammar_sample [SCHEMA.json...]
//   env PLIMSOLL_SHARED_DIR: where vocab-tests/ggml-vocab-llama-spm.gguf is (default ../shared
//   beside the repository). Exit 0: all passed; 1: some failed; 77: not run (no vocabulary).
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..");
const SEEDS = Array.from({ length: 10 }, (_, i) => i + 1);

const sampler = process.argv[2];
if (!sampler || !existsSync(sampler)) {
  console.error("usage: check_corpus.mjs GRAMMAR_SAMPLE [SCHEMA.json...] (build it: scripts/build release grammar_sample)");
  process.exit(2);
}
const shared = process.env.PLIMSOLL_SHARED_DIR || resolve(root, "..", "shared");
const vocab = join(shared, "vocab-tests", "ggml-vocab-llama-spm.gguf");
if (!existsSync(vocab)) {
  console.error(`not run: ${vocab} is missing`);
  process.exit(77);
}

// This folder's own npm packages (CI: scripts/install-deps runs npm ci here).
if (!existsSync(join(here, "node_modules", "ajv-formats"))) {
  const r = spawnSync("npm", ["ci", "--prefix", here, "--no-audit", "--no-fund"], { stdio: ["ignore", 2, 2] });
  if (r.status !== 0) {
    console.error("npm ci in tests/grammar_corpus failed");
    process.exit(1);
  }
}
const { default: Ajv } = await import("ajv");
const { default: Ajv2020 } = await import("ajv/dist/2020.js");
const { default: addFormats } = await import("ajv-formats");

function validatorFor(schema) {
  const draft = String(schema.$schema ?? "");
  const ajv = draft.includes("draft-07") ? new Ajv({ allErrors: true, strict: false })
    : new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  return ajv.compile(schema);
}

const dir = join(root, "tests", "data", "schemas");
const files = process.argv.length > 3 ? process.argv.slice(3).map((f) => resolve(f))
  : readdirSync(dir).filter((f) => f.endsWith(".json")).sort().map((f) => join(dir, f));

const utf8 = new TextDecoder("utf-8", { fatal: true });
const failures = [];  // {schema, seeds, why}
let passed = 0;
for (const file of files) {
  const name = basename(file);
  let validate;
  try {
    validate = validatorFor(JSON.parse(readFileSync(file, "utf8")));
  } catch (e) {
    failures.push({ schema: name, seeds: "all", why: `ajv cannot compile the schema: ${e.message}` });
    continue;
  }
  for (const seed of SEEDS) {
    const r = spawnSync(sampler, [file, String(seed), vocab], { maxBuffer: 64 << 20 });
    const stderr = (r.stderr || "").toString().trim();
    if (r.status === 1 && stderr.includes("does not compile")) {
      // The compile does not depend on the seed: one line for all of them.
      failures.push({ schema: name, seeds: "1-10", why: stderr.replace(`${file}: `, "") });
      break;
    }
    if (r.status !== 0) {
      const how = r.signal ? `killed by ${r.signal}` : `exit ${r.status}`;
      failures.push({ schema: name, seeds: String(seed), why: `grammar_sample ${how}: ${stderr.replace(`${file}: `, "")}` });
      continue;
    }
    let text;
    try {
      text = utf8.decode(r.stdout).replace(/\n$/, "");
    } catch (e) {
      failures.push({ schema: name, seeds: String(seed), why: `output is not valid UTF-8: ${r.stdout.toString("latin1")}` });
      continue;
    }
    let value;
    try {
      value = JSON.parse(text);
    } catch (e) {
      failures.push({ schema: name, seeds: String(seed), why: `output is not JSON (${e.message}): ${text}` });
      continue;
    }
    if (!validate(value)) {
      const errors = validate.errors.map((e) => `${e.instancePath || "/"} ${e.message}`).join("; ");
      failures.push({ schema: name, seeds: String(seed), why: `output fails the schema (${errors}): ${text}` });
      continue;
    }
    ++passed;
  }
}

const total = files.length * SEEDS.length;
if (failures.length === 0) {
  console.log(`grammar corpus: ${files.length} schemas x ${SEEDS.length} seeds: all ${total} outputs valid`);
  process.exit(0);
}
const failedSchemas = new Set(failures.map((f) => f.schema));
console.log(`grammar corpus: ${passed} of ${total} outputs valid; ${failedSchemas.size} of ${files.length} schemas failed:`);
for (const f of failures) console.log(`FAIL ${f.schema} seed ${f.seeds}: ${f.why}`);
process.exit(1);
