#!/usr/bin/python3
"""make_corpus.py — writes the tokenizer comparison corpus (corpus.txt, one
JSON string per line so that newlines and any code point survive) and
invalid_utf8.txt (one line of hex bytes per line). Deterministic: the output
is committed, and rerunning this script must reproduce it byte for byte.

    /usr/bin/python3 tests/tokenizer/make_corpus.py tests/tokenizer
"""
import json
import random
import sys

PROSE = [
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times.",
    "She said: \"I can't believe it's already Tuesday!\"",
    "We'll meet at 10:30 a.m. on the 3rd floor; don't be late.",
    "They're sure you've seen the U.S.A. map before, aren't they?",
    "Scoring services rank candidate items by their log-probability.",
    "A single wrong token id silently changes every score downstream.",
    "HELLO WORLD, THIS IS SHOUTING. I'M SORRY, I'LL STOP. WE'D BETTER.",
    "Mr. O'Neil's dog -- a terrier -- barked at the mail-carrier (twice).",
    "Prices rose 3.5% year-over-year, from $1,299.99 to $1,345.49.",
    "Email me at someone@example.com or visit https://example.org/path?q=1&r=2#frag.",
    "The function returned NaN, -Infinity, and 1e-7 in that order.",
    "Über naïve café owners rarely say \"déjà vu\" on a Sunday.",
    "In 1492, Columbus sailed the ocean blue; in 1969, Apollo 11 landed.",
    "Well... that's odd!!! Isn't it??? Maybe; maybe not.",
    "Temperature: -40°C equals -40°F, which is a coincidence.",
    "ALL CAPS and MiXeD cAsE and lowercase words together.",
    "Don't, won't, can't, shouldn't, wouldn't, couldn't, isn't.",
    "Tokenizers split text into pieces; the pieces map to ids.",
    "Once upon a time, in a land far, far away, lived a dragon.",
]

CODE = [
    "int main(int argc, char **argv) {\n\treturn argc > 1 ? 0 : 1;\n}",
    "def f(x):\n    if x < 0:\n        return -x\n    return x ** 2\n",
    "for (let i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "#include <stdio.h>\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n",
    "fn main() -> Result<(), Box<dyn Error>> {\n    println!(\"{:?}\", vec![1, 2, 3]);\n    Ok(())\n}",
    "if [ -z \"$HOME\" ]; then echo 'no home' >&2; exit 1; fi",
    "<div class=\"box\"><span id='x'>&lt;b&gt;</span></div>",
    "{\"key\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\"}}",
    "x = [i*i for i in range(10) if i % 2 == 0]  # squares",
    "    \t\tmixed_indentation = True\n\t    still_mixed = False",
    "public static void main(String[] args) { System.out.println(\"hi\"); }",
    "while (*p++ = *q++) ;  /* copy */",
    "a->b.c[d](e)?.f ?? g || h && !i",
    "git commit -m \"fix: don't crash on empty input\" && git push origin main",
]

CJK = [
    "我们今天去公园散步，天气非常好。",
    "机器学习模型需要大量的训练数据。",
    "東京は日本の首都です。人口は約千四百万人です。",
    "ひらがなとカタカナと漢字を混ぜて書きます。",
    "한국어는 한글로 씁니다. 안녕하세요!",
    "中文、日本語、한국어が一行に混在しています。",
    "「引用」と『二重引用』、（括弧）と【墨付き括弧】。",
    "全角スペース　を含む　テキスト。",
    "第１２３号　ＡＢＣ　ｱｲｳ（半角カナ）",
    "繁體中文與简体中文並存。",
]

OTHER_SCRIPTS = [
    "مرحبا بالعالم، كيف حالك اليوم؟",
    "اللغة العربية تكتب من اليمين إلى اليسار ١٢٣٤٥.",
    "नमस्ते दुनिया, आप कैसे हैं?",
    "हिन्दी देवनागरी लिपि में लिखी जाती है। १२३",
    "Привет, мир! Как дела? Ёлка и щука.",
    "Γειά σου Κόσμε! Αλφάβητο: αβγδε ΑΒΓΔΕ.",
    "שלום עולם, מה שלומך?",
    "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "Xin chào thế giới! Tiếng Việt có nhiều dấu.",
    "Türkçe: ğüşıöç ĞÜŞİÖÇ; Polski: zażółć gęślą jaźń.",
    "ქართული ენა, Հայերեն լեզու, አማርኛ ቋንቋ",
    "தமிழ் மொழி, తెలుగు భాష, ಕನ್ನಡ ಭಾಷೆ, മലയാളം",
]

EMOJI = [
    "I love pizza 🍕 and tacos 🌮!",
    "Family: 👨‍👩‍👧‍👦 couple: 👩‍❤️‍👨 rainbow flag: 🏳️‍🌈",
    "Skin tones: 👍🏻 👍🏼 👍🏽 👍🏾 👍🏿",
    "Flags: 🇺🇸 🇯🇵 🇩🇪 🇧🇷 🏴󠁧󠁢󠁳󠁣󠁴󠁿",
    "Keycaps: 1️⃣ 2️⃣ #️⃣ *️⃣ and ©️ ®️ ™️",
    "🧑‍💻 coding at 3am ☕☕☕ 🔥🔥",
    "😀😃😄😁😆😅😂🤣🥲☺️😊😇🙂🙃😉",
    "Mixed: text🙂text, 🙂 spaced 🙂, end🙂",
]

SPECIAL = [
    "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "before<|endoftext|>after",
    "<s>[INST] What is 2+2? [/INST] 4</s>",
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>",
    "text with <s> and </s> in the middle, and <unk> too",
    "<|im_start|><|im_start|><|im_end|><|endoftext|>",
    "almost special: <|im_star|> <|endoftext| <s >  </ s>",
    "  <|im_end|>  spaced specials  <|endoftext|>  ",
    "<think>\nreasoning\n</think>\n\nanswer",
    "<tool_call>{\"name\": \"f\"}</tool_call>",
    "<|reserved_special_token_5|> and <|finetune_right_pad_id|>",
    "<<s>> <</s>> <<|endoftext|>>",
]

# Edge cases aimed at the pre-tokenizer regex and the normalizers.
EDGE = [
    "it'S DON'T we'RE I'M you'LL he'D they'VE",
    "'s 't 're 've 'm 'll 'd at the start",
    "long s after apostrophe: 'ſ and Kelvin 'K ſtreet",
    "BOM\ufeffinside and\ufeff\ufeffdouble",
    "\ufeffstarts with a BOM",
    "no-break\u00a0space and narrow\u202fno-break and ideographic\u3000space",
    "next line\u0085char and mongolian\u180eseparator",
    "line\u2028separator and paragraph\u2029separator",
    "decomposed e\u0301 and a\u0308 and n\u0303 (NFC composes them)",
    "Hangul jamo \u1100\u1161\u11a8 composes; compatibility \uf900\uf901",
    "Angstrom \u212b and Ohm \u2126 and Kelvin \u212a normalize",
    "kana with voiced mark \u304b\u3099 and \u30cf\u309a",
    "zero\u200bwidth\u200cnon\u200djoiner",
    "tabs\tbetween\twords\t\tand\t\t\ttrailing\t",
    "carriage\r\nreturns\r\n\r\nand\rlone CR",
    "control chars \x01\x02\x07\x1b[31m red \x1b[0m",
    "null\x00byte inside",
    "a" * 300,
    "🙂" * 64,
    "x" + " " * 200 + "y",
    "12345678901234567890123456789012345678901234567890",
    "3.14159265358979323846 and 2.718281828459045 and 1,000,000",
    "phone +1 (555) 010-9999, ZIP 90210-1234",
    "٠١٢٣٤٥٦٧٨٩ and ०१२३४५६७८९ and ０１２３４５",
    "Ⅻ roman ⅻ and ½ ¼ ¾ fractions and ² ³ superscripts",
    "▁already▁has▁spiece▁marks ▁ ▁▁",
    "ĠĊ byte-level looking chars ĉ ł Ġthe",
]

WORDS = sorted(set(" ".join(PROSE).replace(",", " ").replace(".", " ").split()))
SYLLABLES = ["ka", "lo", "mi", "tar", "zen", "qu", "ex", "ion", "ph", "str", "ough", "ei"]


def random_prose(rng):
    n = rng.randint(3, 40)
    words = []
    for _ in range(n):
        r = rng.random()
        if r < 0.7:
            words.append(rng.choice(WORDS))
        elif r < 0.85:
            words.append("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 6))))
        else:
            words.append(str(rng.randint(0, 10 ** rng.randint(1, 12))))
    sep = rng.choice([" ", " ", " ", "  ", ", ", "\n", " - "])
    text = sep.join(words)
    return text[0].upper() + text[1:] + rng.choice([".", "!", "?", "", "...", ";"])


def random_digits(rng):
    parts = []
    for _ in range(rng.randint(1, 6)):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40)))
        parts.append(digits)
    return rng.choice([" ", "", ",", ".", "-", "/", ":"]).join(parts)


def random_whitespace(rng):
    pieces = []
    for _ in range(rng.randint(1, 8)):
        ws = "".join(rng.choice([" ", " ", "\n", "\t", "\r\n", "\u00a0", "\u3000"])
                     for _ in range(rng.randint(1, 60)))
        pieces.append(ws)
        pieces.append(rng.choice(["word", "x", "Hello", "數", "🙂", "1", "!", ""]))
    return "".join(pieces)


def random_codepoints(rng):
    blocks = [(0x20, 0x7E), (0xA1, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x5D0, 0x5EA),
              (0x620, 0x64A), (0x905, 0x939), (0x3041, 0x3096), (0x30A1, 0x30FA),
              (0x4E00, 0x9FA5), (0xAC00, 0xD7A3), (0x1F600, 0x1F64F), (0x2000, 0x206F),
              (0x2190, 0x23FF), (0x300, 0x36F)]
    out = []
    for _ in range(rng.randint(1, 50)):
        lo, hi = rng.choice(blocks)
        out.append(chr(rng.randint(lo, hi)))
        if rng.random() < 0.15:
            out.append(" ")
    return "".join(out)


def mix(rng, pools):
    parts = [rng.choice(rng.choice(pools)) for _ in range(rng.randint(2, 4))]
    return rng.choice([" ", "\n", "", "\n\n", "\t"]).join(parts)


def corpus_lines():
    rng = random.Random(20240611)
    lines = PROSE + CODE + CJK + OTHER_SCRIPTS + EMOJI + SPECIAL + EDGE
    pools = [PROSE, CODE, CJK, OTHER_SCRIPTS, EMOJI, SPECIAL, EDGE]
    generators = [random_prose] * 5 + [random_digits, random_whitespace, random_codepoints] + \
        [lambda r: mix(r, pools)] * 3
    while len(lines) < 2100:
        lines.append(rng.choice(generators)(rng))
    # A few long lines: a long word, long whitespace and newline runs, a long
    # mixed paragraph (the merge loop must not be quadratic).
    lines.append("".join(rng.choice("abcdefghij") for _ in range(5000)))
    lines.append(" " * 3000 + "end")
    lines.append("\n" * 1000 + "end" + "\t" * 500)
    lines.append(" ".join(random_prose(rng) for _ in range(200)))
    lines.append("9" * 2000)
    return lines


def invalid_lines():
    rng = random.Random(7)
    fixed = [
        b"\xff", b"\xfe\xff", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
        b"\xf8\x88\x80\x80\x80", b"abc\x80def", b"\xe4\xb8", b"\xe4\xb8 trailing",
        b"\xf0\x9f\x98", b"Hello \xc3\x28 world", b"\x80\x80\x80\x80", b"\xc3",
        b"<|im_start|>\xff<|im_end|>", b"<s>\xe2\x82</s>", b"\xef\xbb\xbf\xff BOM then bad",
        b"ok \xf0\x9f\x99\x82 then \xf0\x9f\x99", b"\xc2\xc2\xc2", b"\xe1\x80\xe1\x80",
    ]
    lines = list(fixed)
    for _ in range(80):
        base = rng.choice(PROSE + CJK + EMOJI).encode("utf-8")
        b = bytearray(base)
        for _ in range(rng.randint(1, 5)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        lines.append(bytes(b))
    return lines


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    with open(f"{out}/corpus.txt", "w", encoding="utf-8", newline="\n") as f:
        for line in corpus_lines():
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    with open(f"{out}/invalid_utf8.txt", "w", encoding="ascii", newline="\n") as f:
        for line in invalid_lines():
            f.write(line.hex() + "\n")


if __name__ == "__main__":
    main()
