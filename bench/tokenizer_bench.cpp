// Tokenizer throughput (bytes of text per second) on English-like text, for the
// sentencepiece (llama-spm) and byte-level BPE (gpt-2, deepseek-llm) vocabularies of
// ../shared/vocab. Set STRATA_SHARED to the shared folder when not run from the repo.
//
//   build/bench/tokenizer_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string shared_dir() {
  if (const char* env = std::getenv("STRATA_SHARED")) return env;
  for (const char* candidate : {"shared", "../shared", "../../shared", "../../../shared"}) {
    if (std::filesystem::exists(std::string(candidate) + "/vocab")) return candidate;
  }
  return "../shared";
}

// About 1 MiB of English-like prose from a fixed word list and a fixed-seed generator.
const std::string& english_text() {
  static const std::string text = [] {
    static const char* kWords[] = {"the",
                                   "of",
                                   "and",
                                   "to",
                                   "in",
                                   "a",
                                   "is",
                                   "that",
                                   "for",
                                   "it",
                                   "as",
                                   "was",
                                   "with",
                                   "be",
                                   "by",
                                   "on",
                                   "not",
                                   "he",
                                   "I",
                                   "this",
                                   "are",
                                   "or",
                                   "his",
                                   "from",
                                   "at",
                                   "which",
                                   "but",
                                   "have",
                                   "an",
                                   "had",
                                   "they",
                                   "you",
                                   "were",
                                   "their",
                                   "one",
                                   "all",
                                   "we",
                                   "can",
                                   "her",
                                   "has",
                                   "there",
                                   "been",
                                   "if",
                                   "more",
                                   "when",
                                   "will",
                                   "would",
                                   "who",
                                   "so",
                                   "no",
                                   "model",
                                   "token",
                                   "inference",
                                   "engine",
                                   "memory",
                                   "attention",
                                   "sequence",
                                   "request",
                                   "throughput",
                                   "latency",
                                   "dream",
                                   "gentle",
                                   "probability",
                                   "tapestry",
                                   "vectors",
                                   "kaleidoscope",
                                   "understanding",
                                   "beautiful",
                                   "government",
                                   "information",
                                   "between",
                                   "development",
                                   "everything",
                                   "Tuesday",
                                   "London",
                                   "2024",
                                   "3.14",
                                   "don't",
                                   "it's"};
    std::string s;
    uint64_t state = 0x2545F4914F6CDD1Dull;
    size_t words_in_sentence = 0;
    while (s.size() < (1u << 20)) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      std::string word = kWords[state % (sizeof(kWords) / sizeof(kWords[0]))];
      if (words_in_sentence == 0)
        word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
      s += word;
      ++words_in_sentence;
      if (words_in_sentence > 6 + (state >> 40) % 12) {
        s += (state >> 20) % 4 == 0 ? ".\n" : ". ";
        words_in_sentence = 0;
      } else {
        s += (state >> 30) % 9 == 0 ? ", " : " ";
      }
    }
    return s;
  }();
  return text;
}

// About 1 MiB of random lowercase "words": almost no word repeats, so the tokenizers'
// per-thread word cache rarely hits and this measures the merge loops themselves.
const std::string& unique_words_text() {
  static const std::string text = [] {
    std::string s;
    uint64_t state = 0x9E3779B97F4A7C15ull;
    while (s.size() < (1u << 20)) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      const size_t length = 2 + state % 9;
      for (size_t i = 0; i < length; ++i) s += static_cast<char>('a' + (state >> (8 + 3 * i)) % 26);
      s += (state >> 60) == 0 ? ".\n" : " ";
    }
    return s;
  }();
  return text;
}

const strata::Tokenizer& tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<strata::Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    const auto path = shared_dir() + "/vocab/ggml-vocab-" + name + ".gguf";
    slot = std::make_unique<strata::Tokenizer>(
        strata::Tokenizer::from_gguf(strata::gguf::GgufFile::open(path)));
  }
  return *slot;
}

void encode(benchmark::State& state, const std::string& name) {
  const auto& tok = tokenizer(name);
  const std::string& text = english_text();
  size_t n_tokens = 0;
  for (auto _ : state) {
    auto ids = tok.encode(text, true, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["bytes/token"] = static_cast<double>(text.size()) / static_cast<double>(n_tokens);
}

void encode_unique_words(benchmark::State& state, const std::string& name) {
  const auto& tok = tokenizer(name);
  const std::string& text = unique_words_text();
  for (auto _ : state) benchmark::DoNotOptimize(tok.encode(text, true, false).data());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

// Encoding line by line: many short calls, like chat prompts.
void encode_lines(benchmark::State& state, const std::string& name) {
  const auto& tok = tokenizer(name);
  std::vector<std::string> lines;
  const std::string& text = english_text();
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    lines.push_back(text.substr(pos, end + 1 - pos));
    pos = end + 1;
  }
  for (auto _ : state) {
    for (const auto& line : lines) benchmark::DoNotOptimize(tok.encode(line, true, true).data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

void decode(benchmark::State& state, const std::string& name) {
  const auto& tok = tokenizer(name);
  const auto ids = tok.encode(english_text(), true, false);
  for (auto _ : state) benchmark::DoNotOptimize(tok.decode(ids).data());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * english_text().size()));
}

void stream_decode(benchmark::State& state, const std::string& name) {
  const auto& tok = tokenizer(name);
  const auto ids = tok.encode(english_text(), true, false);
  for (auto _ : state) {
    strata::StreamingDecoder decoder(tok);
    size_t bytes = 0;
    for (int32_t id : ids) bytes += decoder.push(id).size();
    bytes += decoder.flush().size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * english_text().size()));
}

BENCHMARK_CAPTURE(encode, spm, std::string("llama-spm"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, gpt2, std::string("gpt-2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, deepseek_llm, std::string("deepseek-llm"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_unique_words, spm, std::string("llama-spm"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_unique_words, gpt2, std::string("gpt-2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_unique_words, deepseek_llm, std::string("deepseek-llm"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_lines, spm, std::string("llama-spm"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_lines, gpt2, std::string("gpt-2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decode, spm, std::string("llama-spm"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decode, gpt2, std::string("gpt-2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(stream_decode, spm, std::string("llama-spm"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(stream_decode, gpt2, std::string("gpt-2"))->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
