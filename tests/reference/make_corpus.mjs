// Writes tests/data/hf_tokenizer/corpus.jsonl: 2,400 deterministic lines (JSON
// strings, so they may hold newlines) mixing scripts, emoji, digits, code, spaces.
import fs from "fs";
import path from "path";
import { fileURLToPath } from "url";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, "../data/hf_tokenizer/corpus.jsonl");

let seed = 20251202;
function rand() {  // xorshift32: the same corpus on every machine
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
const pick = (list) => list[Math.floor(rand() * list.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

const words = {
  en: ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "Hello", "world", "tokenizer",
       "inference", "server", "running", "Once", "upon", "a", "time", "there", "was", "little", "girl"],
  contractions: ["I'm", "don't", "you'll", "we've", "she'd", "it's", "they're", "I'M", "DON'T", "He'S",
                 "WE'RE", "y'all", "'tis", "rock'n'roll", "O'Neil", "can't", "won't", "Let's"],
  de: ["Größe", "Straße", "über", "Mädchen", "schön", "Fußgänger", "Äpfel", "Öl"],
  fr: ["café", "naïve", "résumé", "être", "déjà", "garçon", "où", "l'été", "c'est"],
  es: ["niño", "señor", "año", "¿Qué", "tal?", "¡Hola!", "corazón"],
  ru: ["Привет", "мир", "токенизатор", "быстрый", "ёлка", "Съешь", "же", "ещё"],
  el: ["Καλημέρα", "κόσμε", "αλφάβητο", "Ωμέγα"],
  zh: ["你好", "世界", "中文分词", "机器学习", "模型", "的", "是", "我们"],
  ja: ["こんにちは", "世界", "カタカナ", "ひらがな", "東京", "ラーメン", "です"],
  ko: ["안녕하세요", "세계", "토크나이저", "한국어"],
  ar: ["مرحبا", "بالعالم", "العربية", "كتاب"],
  he: ["שלום", "עולם", "עברית"],
  hi: ["नमस्ते", "दुनिया", "हिन्दी"],
  th: ["สวัสดี", "ภาษาไทย"],
  emoji: ["😀", "🎉", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "🇯🇵", "❤️", "🤖", "🚀", "✨", "🧑🏿‍💻", "☕", "🏳️‍🌈"],
  marks: ["e\u0301", "n\u0303", "A\u030A", "\u1E9B\u0323", "ﬁ", "Ⅻ", "①", "½", "²", "１２３", "Ｆｕｌｌ"],
  spaces: [" ", "  ", "   ", "\t", "\t\t", "\u00A0", "\u3000", "\u2009", "\u200B", "\n", "\n\n", "\r\n", " \n ", "\n\n\n"],
  punct: [".", ",", "!", "?", "...", "—", "–", "\"", "'", "(", ")", "[", "]", "{", "}", ":", ";",
          "-", "_", "/", "\\", "@", "#", "$", "%", "^", "&", "*", "+", "=", "<", ">", "|", "~", "`", "«", "»", "“", "”"],
  specials: ["<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>",
             "<|eot_id|>", "<bos>", "<eos>", "<start_of_turn>", "<|start_header_id|>", "< s>", "<|im_start"],
};
const codeLines = [
  "def f(x):\n    return x ** 2  # square",
  "for (int i = 0; i < n; ++i) { sum += a[i]; }",
  "const x = {\"key\": [1, 2, 3], 'b': null};",
  "if err != nil {\n\treturn fmt.Errorf(\"failed: %w\", err)\n}",
  "SELECT id, name FROM users WHERE age >= 21 ORDER BY name;",
  "#include <vector>\nstd::vector<int32_t> ids;",
  "    indented    code\twith\ttabs   ",
  "x=1;y=2;z=x+y",
  "<div class=\"a\">&nbsp;</div>",
  "$ ./configure --prefix=/usr && make -j2",
  "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
  "    \n    \n",
];
const numbers = () => pick([
  String(int(0, 9)), String(int(10, 99)), String(int(100, 9999)), String(int(10000, 99999999)),
  `${int(0, 999)}.${int(0, 99)}`, `${int(1, 9)},${int(100, 999)},${int(100, 999)}`, `-${int(1, 500)}`,
  `${int(1, 12)}/${int(1, 28)}/20${int(10, 30)}`, `0x${int(0, 65535).toString(16)}`, `${int(1, 9)}e-${int(1, 9)}`,
]);

function token() {
  const r = rand();
  if (r < 0.30) return pick(words.en);
  if (r < 0.38) return pick(words.contractions);
  if (r < 0.50) return pick(words[pick(["de", "fr", "es", "ru", "el", "zh", "ja", "ko", "ar", "he", "hi", "th"])]);
  if (r < 0.58) return numbers();
  if (r < 0.65) return pick(words.emoji);
  if (r < 0.69) return pick(words.marks);
  if (r < 0.80) return pick(words.punct);
  if (r < 0.83) return pick(words.specials);
  return pick(words.spaces);
}

function line(i) {
  if (i % 17 === 0) return pick(codeLines);
  if (i % 29 === 0) return pick(words.spaces) + pick(words.en) + pick(words.spaces);
  const n = int(1, 24);
  let s = "";
  for (let k = 0; k < n; k++) {
    const t = token();
    s += (k > 0 && rand() < 0.7 && !/^\s/.test(t) ? " " : "") + t;
  }
  return s;
}

const fixed = ["", " ", "  ", "\n", "Hello world", " Hello", "Hello ", "I'm", "1234567", "😀", "a\u0301",
               "<s>Hello</s>", "<|im_start|>user\nHi<|im_end|>", "   leading", "trailing   ", "\t\ttabs",
               "multiple\n\n\nnewlines", "ß", "İstanbul", "ǅ", "ﬃ"];
const lines = [...fixed];
for (let i = 0; lines.length < 2400; i++) lines.push(line(i));
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
console.log(`wrote ${lines.length} lines to ${out}`);
