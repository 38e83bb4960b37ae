#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdio>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace strata::tok {

namespace {

// The regexes of llama.cpp's llm_tokenizer_bpe, per family. The GPT-2 pattern ends in
// "|\s+" like llama.cpp's hand-written matcher for it (the regex text it lists omits it).
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kSeedCoder =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kBailing =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
constexpr const char* kBloom =
    R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)";
constexpr const char* kDeepseek3Main =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct Family {
  std::vector<std::string_view> names;
  std::vector<const char*> patterns;
  bool ignore_merges = false;
  bool add_bos = false;
};

const Family& default_family() {
  static const Family family = {{"default"},
                                {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}};
  return family;
}

const std::vector<Family>& families() {
  static const std::vector<Family> list = {
      default_family(),
      {{"gpt-2",      "gpt2",       "gpt-neox",        "phi-2",        "mpt",         "olmo",
        "jais",       "trillion",   "granite-docling", "exaone4",      "jina-es",     "jina-de",
        "jina-v2-es", "jina-v2-de", "jina-v1-en",      "jina-v2-code", "roberta-bpe", "gigachat",
        "a.x-4.0",    "mellum",     "modern-bert"},
       {kGpt2}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
        "jina-v5-nano"},
       {kLlama3},
       true,
       true},
      {{"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, {kLlama3}},
      {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "hunyuan", "megrez",
        "solar-open"},
       {kQwen2}},
      {{"qwen35"}, {kQwen35}},
      {{"deepseek-llm"},
       {"[\r\n]",
        // Latin, Greek, Cyrillic, ... letters as deepseek-llm's tokenizer.json lists them.
        "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
        "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"
        "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-"
        "\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
        "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-"
        "\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}"
        "\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}"
        "\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}"
        "\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-"
        "\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}"
        "\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}"
        "\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}"
        "\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-"
        "\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}"
        "\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"
        "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"
        "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
        "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
        "\\s+$", "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}+"}},
      {{"deepseek-coder"},
       {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+",
        "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}"}},
      {{"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"},
       {"\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
        kDeepseek3Main}},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b",
        "mellum2"},
       {"\\p{N}", kGpt2}},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {kBloom}},
      {{"viking"}, {kBloom, "\\p{N}"}},
      {{"tekken"}, {kTekken}, true, true},
      {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {kGpt4o}},
      {{"seed-coder"}, {kSeedCoder}},
      {{"bailingmoe", "bailingmoe2", "llada-moe"}, {kBailing}},
      {{"grok-2"}, {kQwen2}},
      {{"chameleon"},
       {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
        "[\\p{P}!-/:-@\\[-`{-~]", kGpt2},
       false,
       true},
  };
  return list;
}

// Unicode White_Space (what llama.cpp's matchers and Hugging Face's regexes call \s);
// PCRE2's own \s leaves out U+0085.
constexpr std::string_view kWhiteSpace =
    R"(\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// Rewrites \s and \S as explicit White_Space classes.
std::string expand_whitespace(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (e == 'S' && !in_class) {
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

// Per-thread match buffers; pcre2_code is shared read-only between threads.
struct MatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  MatchState() {
    if (context != nullptr && jit_stack != nullptr)
      pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  MatchState(const MatchState&) = delete;
  MatchState& operator=(const MatchState&) = delete;
};

MatchState& match_state() {
  thread_local MatchState state;
  if (state.data == nullptr) throw Error("tokenizer: out of memory for regex match data");
  return state;
}

}  // namespace

class Regex {
 public:
  explicit Regex(const std::string& pattern) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    const std::string expanded = expand_whitespace(pattern);
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(expanded.data()), expanded.size(),
                          PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY,
                          &error, &error_offset, nullptr);
    if (code_ == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      throw Error("tokenizer: pre-tokenizer regex " + quote_for_error(pattern) +
                  " does not compile: " + reinterpret_cast<const char*>(message) + " at offset " +
                  std::to_string(error_offset));
    }
    // Without JIT (unsupported platform) pcre2_match falls back to the interpreter.
    jit_ = pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE) == 0;
  }
  ~Regex() { pcre2_code_free(code_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Calls on_piece(offset, length) for the matches of this regex in `subject` and the
  // gaps between them, in order.
  template <typename F>
  void for_each_piece(MatchState& state, std::string_view subject, F&& on_piece) const {
    const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
    size_t pos = 0, last_end = 0;
    uint32_t options = 0;
    while (pos <= subject.size()) {
      const int rc =
          jit_ && options == 0
              ? pcre2_jit_match(code_, data, subject.size(), pos, 0, state.data, state.context)
              : pcre2_match(code_, data, subject.size(), pos, options, state.data, state.context);
      if (rc < 0) {
        // After an empty match, retry one character further; otherwise (no match, or a
        // resource limit on hostile input) the rest is one gap.
        if (rc == PCRE2_ERROR_NOMATCH && options != 0 && pos < subject.size()) {
          options = 0;
          pos += utf8_char_length(subject, pos);
          continue;
        }
        break;
      }
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
      const size_t start = ovector[0], end = ovector[1];
      if (start > last_end) on_piece(last_end, start - last_end);
      if (end > start) on_piece(start, end - start);
      last_end = end;
      pos = end;
      // An empty match splits the text there; the next attempt must not be empty at the
      // same place (the usual PCRE2 global-matching loop).
      options = end == start ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
    }
    if (last_end < subject.size()) on_piece(last_end, subject.size() - last_end);
  }

 private:
  pcre2_code* code_ = nullptr;
  bool jit_ = false;
};

Pretokenizer Pretokenizer::from_patterns(const std::vector<std::string>& patterns) {
  Pretokenizer p;
  for (const auto& pattern : patterns) p.regexes_.push_back(std::make_shared<const Regex>(pattern));
  p.family_ = "custom";
  return p;
}

Pretokenizer Pretokenizer::for_family(std::string_view pre) {
  const Family* found = nullptr;
  for (const Family& f : families()) {
    for (std::string_view name : f.names) {
      if (name == pre) found = &f;
    }
  }
  if (found == nullptr) {
    std::fprintf(
        stderr, "strata: warning: unknown tokenizer.ggml.pre %s, using the default pre-tokenizer\n",
        quote_for_error(pre).c_str());
    found = &default_family();
  }
  Pretokenizer p;
  for (const char* pattern : found->patterns)
    p.regexes_.push_back(std::make_shared<const Regex>(pattern));
  p.ignore_merges_ = found->ignore_merges;
  p.default_add_bos_ = found->add_bos;
  p.family_ = std::string(found->names.front());
  return p;
}

namespace {

// Applies regexes[level..] to text[offset, offset + length): each regex splits every piece
// the previous one produced, depth first, so pieces come out in text order.
template <typename F>
void walk(const std::vector<std::shared_ptr<const Regex>>& regexes, MatchState& state, size_t level,
          std::string_view text, size_t offset, size_t length, F& on_word) {
  if (level == regexes.size()) {
    on_word(text.substr(offset, length));
    return;
  }
  regexes[level]->for_each_piece(state, text.substr(offset, length), [&](size_t start, size_t n) {
    walk(regexes, state, level + 1, text, offset + start, n, on_word);
  });
}

}  // namespace

void Pretokenizer::for_each_word(std::string_view text,
                                 const std::function<void(std::string_view)>& on_word) const {
  if (text.empty()) return;
  walk(regexes_, match_state(), 0, text, 0, text.size(), on_word);
}

void Pretokenizer::split(std::string_view text, std::vector<TextSpan>& out) const {
  out.clear();
  for_each_word(text, [&](std::string_view word) {
    out.push_back({static_cast<size_t>(word.data() - text.data()), word.size()});
  });
}

}  // namespace strata::tok
