#include "eval/logits_file.h"

#include <cmath>
#include <cstring>
#include <fstream>

#include "core/error.h"

namespace strata {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'L', 'G', 'T', '0', '1'};
constexpr uint64_t kHeader = 8 + 4 * 4;
constexpr uint32_t kMaxVocab = 1u << 24;
constexpr uint32_t kMaxCtx = 1u << 20;

uint64_t mul(uint64_t a, uint64_t b, const std::string& what) {
  if (a != 0 && b > UINT64_MAX / a) throw Error(what + ": size overflows");
  return a * b;
}

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t get_u32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

void write_ref_logits(const std::string& path, const RefLogits& r) {
  const auto& p = r.plan;
  const uint64_t rows = static_cast<uint64_t>(p.n_chunks * p.scored_per_chunk());
  if (r.tokens.size() != static_cast<size_t>(p.n_chunks * p.n_ctx) ||
      r.logp.size() != rows * static_cast<uint64_t>(r.n_vocab))
    throw Error("write_ref_logits: sizes do not match the plan");
  std::string head(kMagic, sizeof kMagic);
  put_u32(head, static_cast<uint32_t>(r.n_vocab));
  put_u32(head, static_cast<uint32_t>(p.n_ctx));
  put_u32(head, static_cast<uint32_t>(p.n_chunks));
  put_u32(head, static_cast<uint32_t>(p.first));
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(path + ": cannot open for writing");
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  // The engine targets little-endian x86-64, so the arrays are written as they lie.
  out.write(reinterpret_cast<const char*>(r.tokens.data()),
            static_cast<std::streamsize>(r.tokens.size() * sizeof(int32_t)));
  out.write(reinterpret_cast<const char*>(r.logp.data()),
            static_cast<std::streamsize>(r.logp.size() * sizeof(float)));
  if (!out) throw Error(path + ": write failed");
}

RefLogits read_ref_logits(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(path + ": cannot open");
  const auto end = in.tellg();
  if (end < 0) throw Error(path + ": cannot size");
  const uint64_t size = static_cast<uint64_t>(end);
  in.seekg(0);
  if (size < kHeader) throw Error(path + ": too short for a ref-logits header");
  unsigned char h[kHeader];
  in.read(reinterpret_cast<char*>(h), kHeader);
  if (!in || std::memcmp(h, kMagic, sizeof kMagic) != 0)
    throw Error(path + ": not a strata ref-logits file (magic)");
  const uint32_t n_vocab = get_u32(h + 8), n_ctx = get_u32(h + 12), n_chunks = get_u32(h + 16),
                 first = get_u32(h + 20);
  if (n_vocab == 0 || n_vocab > kMaxVocab)
    throw Error(path + ": n_vocab " + std::to_string(n_vocab) + " out of range");
  if (n_ctx < 4 || n_ctx > kMaxCtx)
    throw Error(path + ": n_ctx " + std::to_string(n_ctx) + " out of range");
  if (n_chunks == 0) throw Error(path + ": n_chunks is 0");
  if (first != n_ctx / 2) throw Error(path + ": first must be n_ctx / 2");
  RefLogits r;
  r.n_vocab = n_vocab;
  r.plan.n_ctx = n_ctx;
  r.plan.n_chunks = n_chunks;
  r.plan.first = first;
  const uint64_t n_tok = mul(n_chunks, n_ctx, path + ": tokens");
  const uint64_t n_rows = mul(n_chunks, static_cast<uint64_t>(r.plan.scored_per_chunk()), path);
  const uint64_t n_vals = mul(n_rows, n_vocab, path + ": logp");
  const uint64_t want = kHeader + mul(n_tok, 4, path) + mul(n_vals, 4, path);
  if (want < kHeader || size != want)
    throw Error(path + ": file is " + std::to_string(size) + " bytes, the header implies " +
                std::to_string(want));
  r.tokens.resize(n_tok);
  r.logp.resize(n_vals);
  in.read(reinterpret_cast<char*>(r.tokens.data()), static_cast<std::streamsize>(n_tok * 4));
  in.read(reinterpret_cast<char*>(r.logp.data()), static_cast<std::streamsize>(n_vals * 4));
  if (!in) throw Error(path + ": read failed");
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    if (r.tokens[i] < 0 || static_cast<uint32_t>(r.tokens[i]) >= n_vocab)
      throw Error(path + ": token " + std::to_string(i) + " (" + std::to_string(r.tokens[i]) +
                  ") outside the vocabulary");
  }
  for (size_t i = 0; i < r.logp.size(); ++i) {
    if (!std::isfinite(r.logp[i]) || r.logp[i] > 1e-3f)
      throw Error(path + ": log-prob " + std::to_string(i) + " is not a finite value <= 0");
  }
  return r;
}

}  // namespace strata
