#include "convert/quantize.h"

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
    case DType::Q4_K:
      return 15;  // Q4_K_M
    case DType::Q6_K:
      return 18;
    case DType::BF16:
      return 32;
    default:
      throw Error("no GGUF file type for '" + std::string(dtype_name(type)) + "'");
  }
}

DType classifier_type(DType target) {
  switch (target) {
    case DType::Q4_0:
    case DType::Q4_K:
      return DType::Q6_K;
    case DType::Q8_0:
    case DType::Q6_K:
      return DType::F16;
    default:
      return target;
  }
}

DType choose_tensor_type(const std::vector<int64_t>& ne, DType target, bool is_classifier) {
  if (ne.size() != 2) return DType::F32;
  const DType want = is_classifier ? classifier_type(target) : target;
  if (ne[0] % dtype_info(want).block_size == 0) return want;
  if (ne[0] % dtype_info(DType::Q8_0).block_size == 0 && want != DType::F32 && want != DType::F16 &&
      want != DType::BF16) {
    return DType::Q8_0;
  }
  return DType::F32;
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
  const auto in = gguf::GgufFile::open(in_path);
  gguf::GgufWriter w;
  for (const auto& [key, value] : in.metadata()) w.set_value(key, value);
  w.set_u32("general.file_type", file_type_for(target));
  // With tied embeddings the embedding matrix is also the classifier.
  const std::string classifier =
      in.find_tensor("output.weight") ? "output.weight" : "token_embd.weight";
  for (const auto& t : in.tensors()) {
    const DType type = choose_tensor_type(t.ne, target, t.name == classifier);
    const uint8_t* data = in.tensor_data(t);
    if (type == t.type) {
      w.add_tensor(t.name, t.type, t.ne, data, static_cast<size_t>(t.n_bytes));
      continue;
    }
    const int64_t cols = t.ne[0];
    const auto rows = static_cast<int64_t>(t.n_elements / static_cast<uint64_t>(cols));
    const auto& from = kernels::type_traits(t.type);
    const size_t src_row_bytes = static_cast<size_t>(t.n_bytes / static_cast<uint64_t>(rows));
    w.add_tensor_lazy(t.name, type, t.ne, [=, &from](uint8_t* dst) {
      std::vector<float> row(static_cast<size_t>(cols));
      const auto& to = kernels::type_traits(type);
      const size_t dst_row_bytes =
          static_cast<size_t>(cols / dtype_info(type).block_size) * dtype_info(type).type_size;
      for (int64_t r = 0; r < rows; ++r) {
        from.to_float(data + static_cast<size_t>(r) * src_row_bytes, row.data(), cols);
        to.from_float(row.data(), dst + static_cast<size_t>(r) * dst_row_bytes, cols);
      }
    });
  }
  w.write(out_path);
}

}  // namespace strata
