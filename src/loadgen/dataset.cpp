#include "loadgen/dataset.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "loadgen/token_source.h"

namespace strata::loadgen {
namespace {

constexpr size_t kMaxRemoteCandidates = 2048;
constexpr size_t kMinWords = 8;
constexpr int kMaxAttempts = 20;

// decode([t, t]) is "W W" or " W W" with W letters only: t starts a word.
bool is_word_pair(const std::string& s) {
  std::string_view v = s;
  if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  if (v.size() < 3 || v.size() % 2 == 0) return false;
  const size_t half = v.size() / 2;
  if (v[half] != ' ' || v.substr(0, half) != v.substr(half + 1)) return false;
  return std::all_of(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(half),
                     [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
}

bool round_trips(TokenSource& tok, const std::vector<int32_t>& ids) {
  return tok.encode(tok.decode(ids)) == ids;
}

// Keeps the ids of `group` that round-trip, splitting failing groups in halves.
void keep_round_trips(TokenSource& tok, std::vector<int32_t> group, std::vector<int32_t>& out) {
  if (group.empty()) return;
  if (round_trips(tok, group)) {
    out.insert(out.end(), group.begin(), group.end());
    return;
  }
  if (group.size() == 1) return;
  const auto mid = group.begin() + static_cast<std::ptrdiff_t>(group.size() / 2);
  keep_round_trips(tok, std::vector<int32_t>(group.begin(), mid), out);
  keep_round_trips(tok, std::vector<int32_t>(mid, group.end()), out);
}

class Builder {
 public:
  Builder(const DatasetOptions& o, TokenSource& tok)
      : o_(o), tok_(tok), rng_(o.seed), words_(word_tokens(tok, o.seed)) {}

  std::vector<int32_t> words(int64_t n) {
    std::uniform_int_distribution<size_t> pick(0, words_.size() - 1);
    std::vector<int32_t> ids(static_cast<size_t>(std::max<int64_t>(n, 0)));
    for (auto& id : ids) id = words_[pick(rng_)];
    return ids;
  }

  // `head` followed by `n` random words, checked to round-trip (new words otherwise).
  Prompt prompt(const std::vector<int32_t>& head, int64_t n, int64_t output_len) {
    for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
      Prompt p;
      p.ids = head;
      const auto tail = words(n);
      p.ids.insert(p.ids.end(), tail.begin(), tail.end());
      p.text = tok_.decode(p.ids);
      p.output_len = output_len;
      if (tok_.encode(p.text) == p.ids) return p;
    }
    throw Error("dataset: could not build a prompt whose text re-tokenizes to the same " +
                std::to_string(head.size() + static_cast<size_t>(n)) + " tokens");
  }

  int64_t scaled(int64_t len) {
    if (o_.range_ratio <= 0) return len;
    const auto lo =
        static_cast<int64_t>(std::floor(static_cast<double>(len) * (1 - o_.range_ratio)));
    const auto hi =
        static_cast<int64_t>(std::ceil(static_cast<double>(len) * (1 + o_.range_ratio)));
    return std::uniform_int_distribution<int64_t>(std::max<int64_t>(lo, 1),
                                                  std::max<int64_t>(hi, 1))(rng_);
  }

  std::vector<Prompt> random() {
    const auto prefix = words(o_.prefix_len);
    std::vector<Prompt> out;
    for (int64_t i = 0; i < o_.num_prompts; ++i) {
      const int64_t in = scaled(o_.input_len);
      const int64_t outl = scaled(o_.output_len);
      out.push_back(prompt(prefix, in, outl));
    }
    return out;
  }

  std::vector<Prompt> shared_prefix() {
    std::vector<std::vector<int32_t>> prefixes;
    for (int64_t k = 0; k < o_.num_prefixes; ++k) prefixes.push_back(words(o_.prefix_len));
    std::vector<Prompt> out;
    for (int64_t i = 0; i < o_.num_prompts; ++i) {
      out.push_back(prompt(prefixes[static_cast<size_t>(i % o_.num_prefixes)], o_.question_len,
                           o_.output_len));
    }
    std::shuffle(out.begin(), out.end(), rng_);
    return out;
  }

  std::vector<Prompt> long_doc() {
    std::vector<std::vector<int32_t>> docs;
    std::bernoulli_distribution repeat(o_.doc_repeat_rate);
    std::uniform_int_distribution<int64_t> doc_len(o_.doc_len_min, o_.doc_len_max);
    std::vector<Prompt> out;
    for (int64_t i = 0; i < o_.num_prompts; ++i) {
      const std::vector<int32_t>* doc = nullptr;
      if (!docs.empty() && repeat(rng_)) {
        doc = &docs[std::uniform_int_distribution<size_t>(0, docs.size() - 1)(rng_)];
      } else {
        docs.push_back(words(doc_len(rng_)));
        doc = &docs.back();
      }
      out.push_back(prompt(*doc, o_.question_len, o_.output_len));
    }
    return out;
  }

 private:
  const DatasetOptions& o_;
  TokenSource& tok_;
  std::mt19937_64 rng_;
  std::vector<int32_t> words_;
};

std::vector<Prompt> jsonl(const DatasetOptions& o, TokenSource& tok) {
  std::ifstream in(o.name);
  if (!in) throw Error(o.name + ": cannot open");
  std::vector<Prompt> out;
  std::string line;
  for (int64_t lineno = 1; std::getline(in, line); ++lineno) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = o.name + ":" + std::to_string(lineno);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw Error(where + ": invalid JSON: " + e.what());
    }
    if (!j.is_object() || !j.contains("prompt") || !j["prompt"].is_string()) {
      throw Error(where + ": expected {\"prompt\": TEXT, \"output_len\": N}");
    }
    Prompt p;
    p.text = j["prompt"].get<std::string>();
    p.ids = tok.encode(p.text);
    p.output_len = o.output_len;
    if (j.contains("output_len") && !j["output_len"].is_null()) {
      if (!j["output_len"].is_number_integer() || j["output_len"].get<int64_t>() < 1) {
        throw Error(where + ": output_len: expected an integer >= 1");
      }
      p.output_len = j["output_len"].get<int64_t>();
    }
    out.push_back(std::move(p));
    if (o.num_prompts > 0 && static_cast<int64_t>(out.size()) == o.num_prompts) break;
  }
  if (out.empty()) throw Error(o.name + ": no prompts");
  return out;
}

bool is_jsonl(const std::string& name) {
  return name.size() > 6 && name.compare(name.size() - 6, 6, ".jsonl") == 0;
}

}  // namespace

void validate(const DatasetOptions& o) {
  if (o.num_prompts < 1) throw Error("--num-prompts: must be at least 1");
  if (o.output_len < 1) throw Error("--output-len: must be at least 1");
  if (is_jsonl(o.name)) return;
  if (o.name == "random") {
    if (o.input_len < 1) throw Error("--input-len: must be at least 1");
    if (!(o.range_ratio >= 0 && o.range_ratio < 1)) throw Error("--range-ratio: must be in [0, 1)");
    if (o.prefix_len < 0) throw Error("--prefix-len: must be >= 0");
  } else if (o.name == "shared-prefix") {
    if (o.prefix_len < 1)
      throw Error("--prefix-len: shared-prefix needs a system prompt length >= 1");
    if (o.num_prefixes < 1) throw Error("--num-prefixes: must be at least 1");
    if (o.num_prefixes > o.num_prompts)
      throw Error("--num-prefixes: must not exceed --num-prompts");
    if (o.question_len < 1) throw Error("--question-len: must be at least 1");
  } else if (o.name == "long-doc") {
    if (o.doc_len_min < 1) throw Error("--doc-len-min: must be at least 1");
    if (o.doc_len_max < o.doc_len_min) throw Error("--doc-len-max: must be >= --doc-len-min");
    if (!(o.doc_repeat_rate >= 0 && o.doc_repeat_rate <= 1)) {
      throw Error("--doc-repeat-rate: must be in [0, 1]");
    }
    if (o.question_len < 1) throw Error("--question-len: must be at least 1");
  } else {
    throw Error("--dataset: expected random, shared-prefix, long-doc or FILE.jsonl, got '" +
                o.name + "'");
  }
}

std::vector<int32_t> word_tokens(TokenSource& tok, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  std::vector<int32_t> words;
  for (const int32_t id : tok.candidate_ids(rng, kMaxRemoteCandidates)) {
    if (is_word_pair(tok.decode({id, id}))) words.push_back(id);
  }
  std::vector<int32_t> kept;
  constexpr size_t kGroup = 64;
  for (size_t i = 0; i < words.size(); i += kGroup) {
    const size_t end = std::min(words.size(), i + kGroup);
    keep_round_trips(tok,
                     std::vector<int32_t>(words.begin() + static_cast<std::ptrdiff_t>(i),
                                          words.begin() + static_cast<std::ptrdiff_t>(end)),
                     kept);
  }
  std::sort(kept.begin(), kept.end());
  if (kept.size() < kMinWords) {
    throw Error("dataset: the vocabulary has only " + std::to_string(kept.size()) +
                " plain word tokens (at least " + std::to_string(kMinWords) + " needed)");
  }
  return kept;
}

std::vector<Prompt> build_dataset(const DatasetOptions& o, TokenSource& tok) {
  validate(o);
  if (is_jsonl(o.name)) return jsonl(o, tok);
  Builder b(o, tok);
  if (o.name == "random") return b.random();
  if (o.name == "shared-prefix") return b.shared_prefix();
  return b.long_doc();
}

}  // namespace strata::loadgen
