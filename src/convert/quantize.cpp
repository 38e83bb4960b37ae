#include "convert/quantize.h"

#include <cctype>
#include <cstring>
#include <exception>
#include <functional>

#include "convert/imatrix.h"
#include "core/checked.h"
#include "core/error.h"
#include "gguf/gguf.h"
#include "kernels/quant/traits.h"

namespace strata {

uint32_t file_type_for(DType type) {
  switch (type) {
    case DType::F32:
      return 0;
    case DType::F16:
      return 1;
    case DType::Q4_0:
      return 2;
    case DType::Q8_0:
      return 7;
    case DType::Q4_1:
      return 3;
    case DType::Q5_0:
      return 8;
    case DType::Q5_1:
      return 9;
    case DType::Q2_K:
      return 10;
    case DType::Q3_K:
      return 12;  // Q3_K_M
    case DType::Q4_K:
      return 15;  // Q4_K_M
    case DType::Q5_K:
      return 17;  // Q5_K_M
    case DType::Q6_K:
      return 18;
    case DType::IQ4_NL:
      return 25;
    case DType::IQ4_XS:
      return 30;
    case DType::BF16:
      return 32;
    default:
      throw Error("no GGUF file type for '" + std::string(dtype_name(type)) + "'");
  }
}

DType classifier_type(DType target) {
  switch (target) {
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::IQ4_NL:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::IQ4_XS:
      return DType::Q6_K;
    case DType::Q8_0:
    case DType::Q6_K:
      return DType::F16;
    default:
      return target;
  }
}

DType choose_tensor_type(const std::vector<int64_t>& ne, DType target, bool is_classifier) {
  // Matrices and stacks of them (MoE experts, MLA's per-head k_b/v_b) are quantized by
  // row; vectors (norms, biases) stay f32.
  if (ne.size() != 2 && ne.size() != 3) return DType::F32;
  const DType want = is_classifier ? classifier_type(target) : target;
  if (ne[0] % dtype_info(want).block_size == 0) return want;
  if (ne[0] % dtype_info(DType::Q8_0).block_size == 0 && want != DType::F32 && want != DType::F16 &&
      want != DType::BF16) {
    return DType::Q8_0;
  }
  return DType::F32;
}

std::optional<QuantScheme> parse_quant_scheme(std::string_view name) {
  std::string lower(name);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool mixed = false;
  if (lower.size() > 2 && lower.compare(lower.size() - 2, 2, "_m") == 0) {
    lower.resize(lower.size() - 2);
    mixed = true;
  }
  const auto type = dtype_from_name(lower);
  if (!type) return std::nullopt;
  if (mixed && *type != DType::Q3_K && *type != DType::Q4_K && *type != DType::Q5_K)
    return std::nullopt;
  if (!mixed && (*type == DType::Q8_K || *type == DType::Q8_1)) return std::nullopt;
  return QuantScheme{*type, mixed};
}

namespace {

// llama.cpp's rule for which layers of an _M mix get more bits in attn_v / ffn_down: the
// first and last eighth, and every third layer in between.
bool more_bits_layer(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// The layer index of a "blk.N.*" tensor, or -1.
int64_t layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos) return -1;
  try {
    return std::stoll(name.substr(4, dot - 4));
  } catch (const std::exception&) {
    return -1;
  }
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

DType mixed_tensor_type(const std::string& name, int64_t n_layers, DType base) {
  const int64_t layer = layer_of(name);
  if (layer < 0 || n_layers <= 0) return base;
  const bool attn_v = ends_with(name, ".attn_v.weight");
  const bool ffn_down = ends_with(name, ".ffn_down.weight");
  if (base == DType::Q3_K) {
    if (attn_v) return layer < 2 ? DType::Q5_K : DType::Q4_K;
    if (ffn_down) {
      if (layer < n_layers / 16) return DType::Q5_K;
      return more_bits_layer(layer, n_layers) ? DType::Q4_K : DType::Q3_K;
    }
    if (ends_with(name, ".attn_output.weight")) return DType::Q4_K;
    return base;
  }
  if ((attn_v || ffn_down) && more_bits_layer(layer, n_layers)) return DType::Q6_K;
  return base;
}

std::vector<uint8_t> encode_rows(const float* src, int64_t rows, int64_t cols, DType type) {
  const auto info = dtype_info(type);
  if (cols % info.block_size != 0)
    throw Error("encode_rows: row length not a multiple of the block size");
  const size_t row_bytes = static_cast<size_t>(cols / info.block_size) * info.type_size;
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(rows));
  const auto& traits = kernels::type_traits(type);
  for (int64_t r = 0; r < rows; ++r) {
    traits.from_float(src + r * cols, out.data() + static_cast<size_t>(r) * row_bytes, cols);
  }
  return out;
}

void quantize_model(const std::string& in_path, const std::string& out_path, DType target) {
  quantize_model(in_path, out_path, QuantScheme{target, false});
}

void quantize_model(const std::string& in_path, const std::string& out_path,
                    const QuantScheme& scheme) {
  QuantizeOptions o;
  o.scheme = scheme;
  quantize_model(in_path, out_path, o);
}

std::string classifier_name(const gguf::GgufFile& in) {
  return in.find_tensor("output.weight") ? "output.weight" : "token_embd.weight";
}

std::map<std::string, DType> planned_types(const gguf::GgufFile& in, const QuantizeOptions& o) {
  const DType target = o.scheme.type;
  int64_t n_layers = 0;
  if (o.scheme.mixed) {
    const std::string arch = in.get_string("general.architecture", "llama");
    n_layers = in.get_int(arch + ".block_count", 0);
  }
  const std::string classifier = classifier_name(in);
  std::map<std::string, DType> out;
  for (const auto& t : in.tensors()) {
    const auto it = o.tensor_types.find(t.name);
    if (it != o.tensor_types.end()) {
      if (t.ne.size() != 2 && t.ne.size() != 3)
        throw Error("quantize: tensor " + t.name + " is not a matrix, it cannot take " +
                    std::string(dtype_name(it->second)));
      if (t.ne[0] % dtype_info(it->second).block_size != 0)
        throw Error("quantize: rows of " + t.name + " (" + std::to_string(t.ne[0]) +
                    ") do not divide into " + std::string(dtype_name(it->second)) + " blocks");
      out[t.name] = it->second;
      continue;
    }
    if (o.keep_others) {
      out[t.name] = t.type;
      continue;
    }
    const bool is_classifier = t.name == classifier;
    const DType want =
        o.scheme.mixed && !is_classifier ? mixed_tensor_type(t.name, n_layers, target) : target;
    out[t.name] = choose_tensor_type(t.ne, want, is_classifier);
  }
  for (const auto& [name, type] : o.tensor_types)
    if (!in.find_tensor(name)) throw Error("quantize: the model has no tensor " + name);
  return out;
}

namespace {

size_t encoded_bytes(const gguf::TensorInfo& t, DType type) {
  const int64_t cols = t.ne[0];
  const auto rows = static_cast<int64_t>(t.n_elements / static_cast<uint64_t>(cols));
  const auto& info = dtype_info(type);
  return static_cast<size_t>(cols / info.block_size) * info.type_size * static_cast<size_t>(rows);
}

// Writes tensor t of `in` re-encoded as `type` (encoded_bytes of them) to dst: the
// weighted scale search where options ask for it and the type has one, the type's plain
// quantizer otherwise. The importance vector is checked before anything is written.
std::function<void(uint8_t*)> tensor_encoder(const gguf::GgufFile& in, const gguf::TensorInfo& t,
                                             DType type, const QuantizeOptions& o) {
  const int64_t cols = t.ne[0];
  const auto rows = static_cast<int64_t>(t.n_elements / static_cast<uint64_t>(cols));
  const auto& from = kernels::type_traits(t.type);
  const size_t src_row_bytes = static_cast<size_t>(t.n_bytes / static_cast<uint64_t>(rows));
  const uint8_t* data = in.tensor_data(t);
  if ((o.search || o.imatrix) && has_weighted_search(type)) {
    std::vector<float> imp;
    if (o.imatrix) imp = o.imatrix->importance(t.name);
    if (!imp.empty() && imp.size() != static_cast<size_t>(cols))
      throw Error("imatrix: " + t.name + " has " + std::to_string(imp.size()) +
                  " columns, the tensor " + std::to_string(cols));
    const OutlierPolicy outliers = o.outliers;
    return [=, &from, imp = std::move(imp)](uint8_t* dst) {
      std::vector<float> x(static_cast<size_t>(rows * cols));
      for (int64_t r = 0; r < rows; ++r)
        from.to_float(data + static_cast<size_t>(r) * src_row_bytes, x.data() + r * cols, cols);
      const auto bytes = encode_rows_searched(x.data(), rows, cols, type,
                                              imp.empty() ? nullptr : imp.data(), outliers);
      std::memcpy(dst, bytes.data(), bytes.size());
    };
  }
  return [=, &from](uint8_t* dst) {
    std::vector<float> row(static_cast<size_t>(cols));
    const auto& to = kernels::type_traits(type);
    const size_t dst_row_bytes =
        static_cast<size_t>(cols / dtype_info(type).block_size) * dtype_info(type).type_size;
    for (int64_t r = 0; r < rows; ++r) {
      from.to_float(data + static_cast<size_t>(r) * src_row_bytes, row.data(), cols);
      to.from_float(row.data(), dst + static_cast<size_t>(r) * dst_row_bytes, cols);
    }
  };
}

gguf::GgufWriter quantize_writer(const gguf::GgufFile& in, const QuantizeOptions& o) {
  const auto types = planned_types(in, o);
  gguf::GgufWriter w;
  for (const auto& [key, value] : in.metadata()) w.set_value(key, value);
  if (!o.keep_others) w.set_u32("general.file_type", file_type_for(o.scheme.type));
  for (const auto& t : in.tensors()) {
    const DType type = types.at(t.name);
    if (type == t.type) {
      w.add_tensor(t.name, t.type, t.ne, in.tensor_data(t), static_cast<size_t>(t.n_bytes));
      continue;
    }
    w.add_tensor_lazy(t.name, type, t.ne, tensor_encoder(in, t, type, o));
  }
  return w;
}

}  // namespace

std::vector<uint8_t> quantize_tensor(const gguf::GgufFile& in, const std::string& name, DType type,
                                     const QuantizeOptions& o) {
  QuantizeOptions one = o;
  one.keep_others = true;
  one.tensor_types = {{name, type}};
  planned_types(in, one);  // checks the tensor exists, is a matrix and divides into blocks
  const gguf::TensorInfo& t = in.tensor(name);
  std::vector<uint8_t> out(encoded_bytes(t, type));
  tensor_encoder(in, t, type, o)(out.data());
  return out;
}

std::vector<uint8_t> quantize_to_buffer(const gguf::GgufFile& in, const QuantizeOptions& o) {
  return quantize_writer(in, o).write_to_buffer();
}

void quantize_model(const std::string& in_path, const std::string& out_path,
                    const QuantizeOptions& o) {
  const auto in = gguf::GgufFile::open(in_path);
  quantize_writer(in, o).write(out_path);
}

}  // namespace strata
