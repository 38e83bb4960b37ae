#include "convert/imatrix.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/error.h"

namespace strata {

void Imatrix::add(const std::string& name, const float* x, int64_t n_tokens, int64_t cols) {
  if (cols <= 0 || n_tokens < 0) throw Error("imatrix: bad shape for " + name);
  ChannelStats& s = tensors_[name];
  if (s.sum_sq.empty()) s.sum_sq.assign(static_cast<size_t>(cols), 0.0);
  if (s.sum_sq.size() != static_cast<size_t>(cols))
    throw Error("imatrix: " + name + " has " + std::to_string(s.sum_sq.size()) +
                " columns, an input of " + std::to_string(cols) + " was added");
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* row = x + t * cols;
    for (int64_t j = 0; j < cols; ++j)
      s.sum_sq[static_cast<size_t>(j)] += static_cast<double>(row[j]) * row[j];
  }
  s.count += static_cast<uint64_t>(n_tokens);
}

std::vector<float> Imatrix::importance(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end() || it->second.count == 0) return {};
  std::vector<float> out(it->second.sum_sq.size());
  for (size_t j = 0; j < out.size(); ++j)
    out[j] = static_cast<float>(it->second.sum_sq[j] / static_cast<double>(it->second.count));
  return out;
}

namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'I', 'M', 'X', '0', '1'};

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

struct Reader {
  const std::string& bytes;
  const std::string& path;
  size_t pos = 0;
  template <class T>
  T get(const char* what) {
    if (bytes.size() - pos < sizeof(T))
      throw Error("imatrix " + path + ": truncated at " + what + " (offset " + std::to_string(pos) +
                  ")");
    T v;
    std::memcpy(&v, bytes.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  size_t left() const { return bytes.size() - pos; }
};

}  // namespace

void Imatrix::save(const std::string& path) const {
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, static_cast<uint32_t>(tensors_.size()));
  for (const auto& [name, s] : tensors_) {
    put<uint32_t>(out, static_cast<uint32_t>(name.size()));
    out += name;
    put<uint32_t>(out, static_cast<uint32_t>(s.sum_sq.size()));
    put<uint64_t>(out, s.count);
    for (double v : s.sum_sq) put<float>(out, static_cast<float>(v));
  }
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("--save-imatrix: cannot create " + path);
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (!f) throw Error("--save-imatrix: write failed: " + path);
}

Imatrix Imatrix::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("--imatrix: cannot open " + path);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw Error("imatrix " + path + ": not an imatrix file (magic STRIMX01 expected)");
  Reader r{bytes, path, sizeof(kMagic)};
  const auto n = r.get<uint32_t>("tensor count");
  Imatrix m;
  for (uint32_t i = 0; i < n; ++i) {
    const auto len = r.get<uint32_t>("name length");
    if (len == 0 || len > r.left())
      throw Error("imatrix " + path + ": bad name length " + std::to_string(len));
    std::string name = bytes.substr(r.pos, len);
    r.pos += len;
    const auto cols = r.get<uint32_t>("column count");
    const auto count = r.get<uint64_t>("token count");
    if (cols == 0 || cols > r.left() / sizeof(float))
      throw Error("imatrix " + path + ": " + name + ": bad column count " + std::to_string(cols));
    if (m.tensors_.count(name)) throw Error("imatrix " + path + ": tensor " + name + " twice");
    ChannelStats s;
    s.count = count;
    s.sum_sq.resize(cols);
    for (uint32_t j = 0; j < cols; ++j) {
      const float v = r.get<float>("values");
      if (!std::isfinite(v) || v < 0)
        throw Error("imatrix " + path + ": " + name + ": value " + std::to_string(j) +
                    " is negative or not finite");
      s.sum_sq[j] = v;
    }
    m.tensors_.emplace(std::move(name), std::move(s));
  }
  if (r.left() != 0)
    throw Error("imatrix " + path + ": " + std::to_string(r.left()) +
                " bytes after the last tensor");
  return m;
}

ImatrixCollector::ImatrixCollector(const Model& model, Imatrix& out) : out_(out) {
  const ModelWeights& w = model.weights();
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& L = w.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    const std::pair<const WeightMatrix*, const char*> mats[] = {
        {&L.wq, "attn_q"},      {&L.wk, "attn_k"},       {&L.wv, "attn_v"},
        {&L.wo, "attn_output"}, {&L.w_gate, "ffn_gate"}, {&L.w_up, "ffn_up"},
        {&L.w_down, "ffn_down"}};
    for (const auto& [m, n] : mats)
      if (m->data) names_[m->data] = p + n + ".weight";
  }
  if (w.output.data)
    names_[w.output.data] =
        w.output.data == w.token_embd.data ? "token_embd.weight" : "output.weight";
}

void ImatrixCollector::observe(const void* weight, const float* x, int64_t n_tokens, int64_t cols) {
  const auto it = names_.find(weight);
  if (it != names_.end()) out_.add(it->second, x, n_tokens, cols);
}

}  // namespace strata
