#include "model/config.h"

#include <string>

#include "core/error.h"
#include "model/arch/arch.h"

namespace strata {
namespace {

// Reads a positive integer hyper-parameter with an upper bound, naming the key on error.
int64_t read_dim(const gguf::GgufFile& f, const std::string& key, int64_t limit) {
  const uint64_t v = f.get_uint(key);
  if (v == 0 || v > static_cast<uint64_t>(limit)) {
    throw Error(f.name() + ": " + key + " = " + std::to_string(v) + " is out of range (1.." +
                std::to_string(limit) + ")");
  }
  return static_cast<int64_t>(v);
}

}  // namespace

ModelConfig config_from_gguf(const gguf::GgufFile& f) {
  ModelConfig c;
  c.arch = f.get_string("general.architecture");
  const ArchSpec* spec = find_arch(c.arch);
  if (!spec) {
    throw Error(f.name() + ": unsupported architecture '" + c.arch +
                "' (strata supports llama, qwen2, qwen3)");
  }
  c.name = f.get_string("general.name", "");
  const std::string a = c.arch + ".";
  c.dim = read_dim(f, a + "embedding_length", 1 << 16);
  c.n_layers = read_dim(f, a + "block_count", 1024);
  c.n_heads = read_dim(f, a + "attention.head_count", 1024);
  c.n_kv_heads = f.has(a + "attention.head_count_kv")
                     ? read_dim(f, a + "attention.head_count_kv", 1024)
                     : c.n_heads;
  c.ffn_dim = read_dim(f, a + "feed_forward_length", 1 << 18);
  c.context_length = read_dim(f, a + "context_length", 1 << 24);
  c.head_dim = f.has(a + "attention.key_length") ? read_dim(f, a + "attention.key_length", 4096)
                                                 : c.dim / c.n_heads;
  c.rope_dim = f.has(a + "rope.dimension_count") ? read_dim(f, a + "rope.dimension_count", 4096)
                                                 : c.head_dim;
  c.rms_eps = static_cast<float>(f.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5));
  c.rope_base = static_cast<float>(f.get_float(a + "rope.freq_base", 10000.0));
  if (f.get_string(a + "rope.scaling.type", "none") == "linear") {
    c.rope_linear_scale = static_cast<float>(f.get_float(a + "rope.scaling.factor", 1.0));
  }
  c.rope_layout = spec->rope_layout;
  c.qkv_bias = spec->qkv_bias;
  c.qk_norm = spec->qk_norm;

  const std::string n = f.name() + ": ";
  if (c.n_heads % c.n_kv_heads != 0) {
    throw Error(n + "attention.head_count (" + std::to_string(c.n_heads) +
                ") is not a multiple of head_count_kv (" + std::to_string(c.n_kv_heads) + ")");
  }
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
    throw Error(n + "rope.dimension_count must be even and <= the head size");
  }
  if (!(c.rms_eps > 0.0f && c.rms_eps < 1.0f))
    throw Error(n + "layer_norm_rms_epsilon out of range");
  if (!(c.rope_base > 0.0f)) throw Error(n + "rope.freq_base must be positive");
  if (!(c.rope_linear_scale > 0.0f)) throw Error(n + "rope.scaling.factor must be positive");
  return c;
}

}  // namespace strata
