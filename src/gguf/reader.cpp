// Parsing and validation of a GGUF file's header, metadata and tensor infos.
//
// The parser trusts nothing in the file: every count is checked against a fixed limit
// and against the bytes that remain before anything is allocated for it, and every
// size or offset is computed with checked arithmetic.

#include <algorithm>
#include <bit>
#include <memory>
#include <numeric>

#include "core/checked.h"
#include "gguf/cursor.h"
#include "gguf/gguf.h"

namespace strata::gguf::detail {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
// The smallest possible encodings, used to reject counts the remaining bytes cannot hold:
// a key/value pair is a u64 length, a 1-byte key, a u32 type and a 1-byte value; a tensor
// info is a u64 length, a 1-byte name, u32 n_dims, one i64 dimension, u32 type, u64 offset.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;
constexpr uint64_t kMinArrayBytes = 4 + 8;  // an (empty) array nested inside an array
constexpr uint64_t kMinStringBytes = 8;     // an empty string

std::string hex_bytes(const uint8_t* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

std::string range_text(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

}  // namespace

// Where each tensor info's fields sit in the file, for error messages after parsing.
struct TensorInfoOffsets {
  uint64_t info;    // start of the tensor info (its name)
  uint64_t ne;      // first dimension
  uint64_t offset;  // the data offset field
};

class Parser {
 public:
  explicit Parser(GgufFile& file)
      : f_(file), cur_(file.bytes_.data(), file.bytes_.size(), file.name_) {}

  void run() {
    parse_header();
    parse_metadata();
    resolve_alignment();
    parse_tensor_infos();
    const uint64_t header_end = cur_.offset();
    const auto data_offset = checked_align_up(header_end, f_.alignment_);
    if (!data_offset) {
      cur_.fail({"tensor data section"}, header_end,
                "aligning to " + std::to_string(f_.alignment_) + " overflows");
    }
    f_.data_offset_ = *data_offset;
    check_tensor_layout();
    check_vocab_matches_embedding();
  }

 private:
  void parse_header() {
    if (cur_.size() < 4) {
      cur_.fail(
          {"magic"}, 0,
          "the file is " + std::to_string(cur_.size()) + " bytes, too short for a GGUF header");
    }
    const uint8_t* magic_bytes = f_.bytes_.data();
    if (cur_.read<uint32_t>({"magic"}) != kMagic) {
      cur_.fail({"magic"}, 0,
                "expected \"GGUF\" (47 47 55 46), found " + hex_bytes(magic_bytes, 4));
    }
    const uint32_t version = cur_.read<uint32_t>({"version"});
    if (version == 1) cur_.fail({"version"}, 4, "GGUF version 1 is not supported (need 2 or 3)");
    if (__builtin_bswap32(version) == 2 || __builtin_bswap32(version) == 3) {
      cur_.fail({"version"}, 4, "big-endian GGUF files are not supported");
    }
    if (version != 2 && version != 3) {
      cur_.fail({"version"}, 4,
                "unsupported version " + std::to_string(version) + " (need 2 or 3)");
    }
    f_.version_ = version;
    tensor_count_ = read_count({"tensor_count"}, kMaxTensorCount, kMinTensorInfoBytes);
    kv_count_ = read_count({"metadata_kv_count"}, kMaxKvCount, kMinKvBytes);
  }

  // Reads a u64 count and rejects it when above `limit` or when `count` items of at
  // least `min_bytes` each cannot fit in the rest of the file.
  uint64_t read_count(const Field& field, uint64_t limit, uint64_t min_bytes) {
    const uint64_t at = cur_.offset();
    const uint64_t count = cur_.read<uint64_t>(field);
    if (count > limit) {
      cur_.fail(field, at,
                std::to_string(count) + " exceeds the limit of " + std::to_string(limit));
    }
    if (count > cur_.remaining() / min_bytes) {
      cur_.fail(field, at,
                std::to_string(count) + " entries cannot fit in the " +
                    std::to_string(cur_.remaining()) + " bytes left in the file");
    }
    return count;
  }

  void parse_metadata() {
    f_.metadata_.reserve(kv_count_);
    f_.value_offsets_.reserve(kv_count_);
    for (uint64_t i = 0; i < kv_count_; ++i) {
      const Field key_field{"metadata key", i};
      const uint64_t key_at = cur_.offset();
      std::string key = cur_.read_string(key_field, kMaxKeyBytes);
      if (key.empty()) cur_.fail(key_field, key_at, "the key is empty");
      const std::string what = "key '" + key + "'";
      if (auto it = f_.key_index_.find(key); it != f_.key_index_.end()) {
        cur_.fail({what}, key_at,
                  "duplicate key (first value at offset " +
                      std::to_string(f_.value_offsets_[it->second]) + ")");
      }
      const std::string type_field = what + " value type";
      const uint32_t type_id = cur_.read<uint32_t>({type_field});
      if (!is_known_value_type(type_id)) {
        cur_.fail({type_field}, cur_.offset() - 4, "unknown value type " + std::to_string(type_id));
      }
      const uint64_t value_at = cur_.offset();
      Value value = read_value(static_cast<ValueType>(type_id), {what}, 0);
      f_.key_index_.emplace(key, f_.metadata_.size());
      f_.value_offsets_.push_back(value_at);
      f_.metadata_.emplace_back(std::move(key), std::move(value));
    }
  }

  // `depth` counts the arrays that enclose the value.
  Value read_value(ValueType type, const Field& field, int depth) {
    switch (type) {
      case ValueType::U8:
        return Value{type, uint64_t{cur_.read<uint8_t>(field)}};
      case ValueType::U16:
        return Value{type, uint64_t{cur_.read<uint16_t>(field)}};
      case ValueType::U32:
        return Value{type, uint64_t{cur_.read<uint32_t>(field)}};
      case ValueType::U64:
        return Value{type, cur_.read<uint64_t>(field)};
      case ValueType::I8:
        return Value{type, int64_t{cur_.read<int8_t>(field)}};
      case ValueType::I16:
        return Value{type, int64_t{cur_.read<int16_t>(field)}};
      case ValueType::I32:
        return Value{type, int64_t{cur_.read<int32_t>(field)}};
      case ValueType::I64:
        return Value{type, cur_.read<int64_t>(field)};
      case ValueType::F32:
        return Value{type, double{cur_.read<float>(field)}};
      case ValueType::F64:
        return Value{type, cur_.read<double>(field)};
      case ValueType::BOOL:
        return Value{type, read_bool(field)};
      case ValueType::STRING:
        return Value{type, cur_.read_string(field, kMaxStringBytes)};
      case ValueType::ARRAY:
        return Value{type, std::make_shared<const Array>(read_array(field, depth + 1))};
    }
    cur_.fail(field, cur_.offset(), "unknown value type");  // unreachable: type was checked
  }

  bool read_bool(const Field& field) {
    const uint64_t at = cur_.offset();
    const uint8_t b = cur_.read<uint8_t>(field);
    if (b > 1) cur_.fail(field, at, "bool value " + std::to_string(b) + " is not 0 or 1");
    return b == 1;
  }

  // An array: u32 element type, u64 count, then the elements. `depth` is this array's
  // nesting depth (1 for an array directly under a key).
  Array read_array(const Field& field, int depth) {
    const std::string base = field.str();
    const uint64_t at = cur_.offset();
    if (depth > kMaxArrayDepth) {
      cur_.fail({base}, at, "arrays nest deeper than " + std::to_string(kMaxArrayDepth));
    }
    const std::string type_field = base + " element type";
    const uint32_t elem_id = cur_.read<uint32_t>({type_field});
    if (!is_known_value_type(elem_id)) {
      cur_.fail({type_field}, at, "unknown array element type " + std::to_string(elem_id));
    }
    const auto elem = static_cast<ValueType>(elem_id);
    const std::string count_field = base + " array length";
    const uint64_t count_at = cur_.offset();
    const uint64_t count = cur_.read<uint64_t>({count_field});
    const uint64_t min_bytes = elem == ValueType::STRING  ? kMinStringBytes
                               : elem == ValueType::ARRAY ? kMinArrayBytes
                                                          : value_type_size(elem);
    if (count > cur_.remaining() / min_bytes) {
      cur_.fail({count_field}, count_at,
                std::to_string(count) + " elements of at least " + std::to_string(min_bytes) +
                    " bytes each cannot fit in the " + std::to_string(cur_.remaining()) +
                    " bytes left in the file");
    }
    Array out;
    out.elem_type = elem;
    switch (elem) {
      case ValueType::U8:
        out.items = read_many<uint8_t, uint64_t>(count, base);
        break;
      case ValueType::U16:
        out.items = read_many<uint16_t, uint64_t>(count, base);
        break;
      case ValueType::U32:
        out.items = read_many<uint32_t, uint64_t>(count, base);
        break;
      case ValueType::U64:
        out.items = read_many<uint64_t, uint64_t>(count, base);
        break;
      case ValueType::I8:
        out.items = read_many<int8_t, int64_t>(count, base);
        break;
      case ValueType::I16:
        out.items = read_many<int16_t, int64_t>(count, base);
        break;
      case ValueType::I32:
        out.items = read_many<int32_t, int64_t>(count, base);
        break;
      case ValueType::I64:
        out.items = read_many<int64_t, int64_t>(count, base);
        break;
      case ValueType::F32:
        out.items = read_many<float, double>(count, base);
        break;
      case ValueType::F64:
        out.items = read_many<double, double>(count, base);
        break;
      case ValueType::BOOL: {
        std::vector<uint64_t> v(count);
        for (uint64_t i = 0; i < count; ++i) v[i] = read_bool({base, i});
        out.items = std::move(v);
        break;
      }
      case ValueType::STRING: {
        std::vector<std::string> v;
        v.reserve(count);
        for (uint64_t i = 0; i < count; ++i)
          v.push_back(cur_.read_string({base, i}, kMaxStringBytes));
        out.items = std::move(v);
        break;
      }
      case ValueType::ARRAY: {
        std::vector<Value> v;
        v.reserve(count);
        for (uint64_t i = 0; i < count; ++i) {
          const std::string elem_name = Field{base, i}.str();
          v.push_back(Value{ValueType::ARRAY,
                            std::make_shared<const Array>(read_array({elem_name}, depth + 1))});
        }
        out.items = std::move(v);
        break;
      }
    }
    return out;
  }

  template <class Raw, class Stored>
  std::vector<Stored> read_many(uint64_t count, const std::string& base) {
    std::vector<Stored> v(count);
    for (uint64_t i = 0; i < count; ++i) v[i] = static_cast<Stored>(cur_.read<Raw>({base, i}));
    return v;
  }

  void resolve_alignment() {
    const auto it = f_.key_index_.find("general.alignment");
    if (it == f_.key_index_.end()) return;
    const Value& v = f_.metadata_[it->second].second;
    const uint64_t at = f_.value_offsets_[it->second];
    if (v.type != ValueType::U32) {
      cur_.fail({"key 'general.alignment'"}, at,
                "has type " + std::string(value_type_name(v.type)) + ", expected u32");
    }
    const uint64_t alignment = *v.as_uint();
    if (!std::has_single_bit(alignment)) {
      cur_.fail({"key 'general.alignment'"}, at,
                std::to_string(alignment) + " is not a nonzero power of two");
    }
    f_.alignment_ = alignment;
  }

  void parse_tensor_infos() {
    f_.tensors_.reserve(tensor_count_);
    offsets_.reserve(tensor_count_);
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      TensorInfoOffsets at{cur_.offset(), 0, 0};
      const Field name_field{"tensor name", i};
      std::string name = cur_.read_string(name_field, kMaxTensorNameBytes);
      if (name.empty()) cur_.fail(name_field, at.info, "the tensor name is empty");
      const std::string what = "tensor '" + name + "'";
      if (auto it = f_.tensor_index_.find(name); it != f_.tensor_index_.end()) {
        cur_.fail({what}, at.info,
                  "duplicate tensor name (first defined at offset " +
                      std::to_string(offsets_[it->second].info) + ")");
      }
      const std::string ndims_field = what + " n_dims";
      const uint32_t n_dims = cur_.read<uint32_t>({ndims_field});
      if (n_dims == 0 || n_dims > kMaxDims) {
        cur_.fail({ndims_field}, cur_.offset() - 4,
                  std::to_string(n_dims) + " is outside 1.." + std::to_string(kMaxDims));
      }
      at.ne = cur_.offset();
      const std::string ne_field = what + " ne";
      std::vector<int64_t> ne(n_dims);
      for (uint32_t d = 0; d < n_dims; ++d) {
        ne[d] = cur_.read<int64_t>({ne_field, d});
        if (ne[d] < 1) {
          cur_.fail({ne_field, d}, cur_.offset() - 8,
                    "dimension " + std::to_string(ne[d]) + " must be at least 1");
        }
      }
      const std::string type_field = what + " type";
      const uint32_t type_id = cur_.read<uint32_t>({type_field});
      const auto info = dtype_info(type_id);
      if (!info) {
        cur_.fail({type_field}, cur_.offset() - 4,
                  "unknown tensor type id " + std::to_string(type_id));
      }
      at.offset = cur_.offset();
      const uint64_t offset = cur_.read<uint64_t>({what + " offset"});

      const uint64_t n_elements = element_count(ne, what, at.ne);
      if (ne[0] % info->block_size != 0) {
        cur_.fail({ne_field, 0}, at.ne,
                  "row length " + std::to_string(ne[0]) + " is not a multiple of the " +
                      std::string(info->name) + " block size " + std::to_string(info->block_size));
      }
      const auto n_bytes = checked_mul(n_elements / static_cast<uint64_t>(info->block_size),
                                       static_cast<uint64_t>(info->type_size));
      if (!n_bytes) cur_.fail({what + " size"}, at.ne, "the byte size overflows 64 bits");

      f_.tensor_index_.emplace(name, f_.tensors_.size());
      f_.tensors_.push_back(TensorInfo{std::move(name), std::move(ne), static_cast<DType>(type_id),
                                       offset, n_elements, *n_bytes});
      offsets_.push_back(at);
    }
  }

  uint64_t element_count(const std::vector<int64_t>& ne, const std::string& what, uint64_t at) {
    uint64_t n = 1;
    for (int64_t d : ne) {
      const auto next = checked_mul(n, static_cast<uint64_t>(d));
      if (!next || *next > static_cast<uint64_t>(INT64_MAX)) {
        cur_.fail({what + " ne"}, at, "the element count overflows 63 bits");
      }
      n = *next;
    }
    return n;
  }

  void check_tensor_layout() {
    const uint64_t file_size = cur_.size();
    for (size_t i = 0; i < f_.tensors_.size(); ++i) {
      const TensorInfo& t = f_.tensors_[i];
      const std::string what = "tensor '" + t.name + "' offset";
      if (t.offset % f_.alignment_ != 0) {
        cur_.fail({what}, offsets_[i].offset,
                  std::to_string(t.offset) + " is not a multiple of the alignment " +
                      std::to_string(f_.alignment_));
      }
      const auto begin = checked_add(f_.data_offset_, t.offset);
      const auto end = begin ? checked_add(*begin, t.n_bytes) : std::nullopt;
      if (!end) {
        cur_.fail({what}, offsets_[i].offset,
                  "data offset " + std::to_string(f_.data_offset_) + " + " +
                      std::to_string(t.offset) + " + size " + std::to_string(t.n_bytes) +
                      " overflows 64 bits");
      }
      if (*end > file_size) {
        cur_.fail({what}, offsets_[i].offset,
                  "data bytes " + range_text(*begin, *end) + " extend past the end of the file (" +
                      std::to_string(file_size) + " bytes)");
      }
    }
    // Sorted by offset, each tensor must end before the next begins.
    std::vector<size_t> order(f_.tensors_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return f_.tensors_[a].offset < f_.tensors_[b].offset ||
             (f_.tensors_[a].offset == f_.tensors_[b].offset && a < b);
    });
    for (size_t k = 1; k < order.size(); ++k) {
      const TensorInfo& prev = f_.tensors_[order[k - 1]];
      const TensorInfo& cur = f_.tensors_[order[k]];
      const uint64_t prev_end = prev.offset + prev.n_bytes;  // cannot overflow: checked above
      if (prev_end > cur.offset) {
        cur_.fail({"tensor '" + cur.name + "' offset"}, offsets_[order[k]].offset,
                  "data " + range_text(cur.offset, cur.offset + cur.n_bytes) +
                      " overlaps tensor '" + prev.name + "' " + range_text(prev.offset, prev_end));
      }
    }
  }

  // llama.cpp-family loaders size the vocabulary from tokenizer.ggml.tokens and the
  // embedding from token_embd.weight; a file where they disagree cannot run.
  void check_vocab_matches_embedding() {
    const auto key = f_.key_index_.find("tokenizer.ggml.tokens");
    const auto tensor = f_.tensor_index_.find("token_embd.weight");
    if (key == f_.key_index_.end() || tensor == f_.tensor_index_.end()) return;
    const Value& tokens = f_.metadata_[key->second].second;
    const Array* arr = tokens.as_array();
    if (!arr) {
      cur_.fail({"key 'tokenizer.ggml.tokens'"}, f_.value_offsets_[key->second],
                "has type " + std::string(value_type_name(tokens.type)) + ", expected an array");
    }
    const TensorInfo& t = f_.tensors_[tensor->second];
    const int64_t rows = t.ne.size() >= 2 ? t.ne[1] : 1;
    if (static_cast<uint64_t>(rows) != arr->size()) {
      const uint64_t at = offsets_[tensor->second].ne + (t.ne.size() >= 2 ? 8 : 0);
      cur_.fail({"tensor 'token_embd.weight' ne[1]"}, at,
                std::to_string(rows) + " rows do not match the " + std::to_string(arr->size()) +
                    " entries of tokenizer.ggml.tokens");
    }
  }

  GgufFile& f_;
  Cursor cur_;
  uint64_t tensor_count_ = 0;
  uint64_t kv_count_ = 0;
  std::vector<TensorInfoOffsets> offsets_;  // parallel to f_.tensors_
};

}  // namespace strata::gguf::detail

namespace strata::gguf {

GgufFile::GgufFile(FileBytes bytes, std::string name)
    : bytes_(std::move(bytes)), name_(std::move(name)) {}

GgufFile GgufFile::open(const std::string& path) {
  GgufFile file(FileBytes::map(path), path);
  detail::Parser(file).run();
  return file;
}

GgufFile GgufFile::read(const std::string& path) {
  GgufFile file(FileBytes::read_into_huge_pages(path), path);
  detail::Parser(file).run();
  return file;
}

GgufFile GgufFile::from_buffer(std::vector<uint8_t> bytes, std::string name) {
  GgufFile file(FileBytes::own(std::move(bytes)), std::move(name));
  detail::Parser(file).run();
  return file;
}

}  // namespace strata::gguf
