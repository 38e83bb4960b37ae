#include "gguf/writer.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "core/checked.h"
#include "core/error.h"
#include "gguf/gguf.h"

namespace strata::gguf {
namespace {

constexpr uint32_t kWriteVersion = 3;

void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  static_assert(std::endian::native == std::endian::little);
  put_bytes(out, &v, sizeof(v));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  put_bytes(out, s.data(), s.size());
}

// Encodes one element of fixed width `t` from its widened representation.
void put_uint(std::vector<uint8_t>& out, ValueType t, uint64_t v) {
  switch (value_type_size(t)) {
    case 1:
      put<uint8_t>(out, static_cast<uint8_t>(v));
      break;
    case 2:
      put<uint16_t>(out, static_cast<uint16_t>(v));
      break;
    case 4:
      put<uint32_t>(out, static_cast<uint32_t>(v));
      break;
    default:
      put<uint64_t>(out, v);
      break;
  }
}

void put_int(std::vector<uint8_t>& out, ValueType t, int64_t v) {
  switch (value_type_size(t)) {
    case 1:
      put<int8_t>(out, static_cast<int8_t>(v));
      break;
    case 2:
      put<int16_t>(out, static_cast<int16_t>(v));
      break;
    case 4:
      put<int32_t>(out, static_cast<int32_t>(v));
      break;
    default:
      put<int64_t>(out, v);
      break;
  }
}

void put_float(std::vector<uint8_t>& out, ValueType t, double v) {
  if (t == ValueType::F32) {
    put<float>(out, static_cast<float>(v));
  } else {
    put<double>(out, v);
  }
}

void put_array(std::vector<uint8_t>& out, const Array& a);

// Writes a value's payload (not its type tag). Values were validated when set.
void put_value(std::vector<uint8_t>& out, const Value& v) {
  if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    put_uint(out, v.type, *u);
  } else if (const auto* i = std::get_if<int64_t>(&v.data)) {
    put_int(out, v.type, *i);
  } else if (const auto* d = std::get_if<double>(&v.data)) {
    put_float(out, v.type, *d);
  } else if (const auto* b = std::get_if<bool>(&v.data)) {
    put<uint8_t>(out, *b ? 1 : 0);
  } else if (const auto* s = std::get_if<std::string>(&v.data)) {
    put_string(out, *s);
  } else {
    put_array(out, *v.as_array());
  }
}

void put_array(std::vector<uint8_t>& out, const Array& a) {
  put<uint32_t>(out, static_cast<uint32_t>(a.elem_type));
  put<uint64_t>(out, a.size());
  if (const auto* u = a.uints()) {
    for (uint64_t x : *u) put_uint(out, a.elem_type, x);
  } else if (const auto* i = a.ints()) {
    for (int64_t x : *i) put_int(out, a.elem_type, x);
  } else if (const auto* f = a.floats()) {
    for (double x : *f) put_float(out, a.elem_type, x);
  } else if (const auto* s = a.strings()) {
    for (const auto& x : *s) put_string(out, x);
  } else {
    for (const Value& x : *a.arrays()) put_array(out, *x.as_array());
  }
}

uint64_t align_or_throw(uint64_t value, uint64_t alignment) {
  const auto r = checked_align_up(value, alignment);
  if (!r) throw Error("gguf writer: file layout overflows 64 bits");
  return *r;
}

}  // namespace

void GgufWriter::set_value(const std::string& key, const Value& v) {
  if (key.empty()) throw Error("gguf writer: metadata key is empty");
  if (key.size() > kMaxKeyBytes) {
    throw Error("gguf writer: metadata key '" + key.substr(0, 64) + "...' is longer than " +
                std::to_string(kMaxKeyBytes) + " bytes");
  }
  validate_value(v, "gguf writer: key '" + key + "'");
  if (key == "general.alignment") {
    if (v.type != ValueType::U32 || !std::has_single_bit(*v.as_uint())) {
      throw Error("gguf writer: key 'general.alignment' must be a u32 nonzero power of two, got " +
                  std::string(value_type_name(v.type)) + " " + v.to_display());
    }
  }
  for (auto& [k, existing] : metadata_) {
    if (k == key) {
      existing = v;
      return;
    }
  }
  metadata_.emplace_back(key, v);
}

bool GgufWriter::has(std::string_view key) const {
  for (const auto& kv : metadata_) {
    if (kv.first == key) return true;
  }
  return false;
}

void GgufWriter::set_u32(const std::string& key, uint32_t v) {
  set_value(key, Value::make_uint(ValueType::U32, v));
}
void GgufWriter::set_i32(const std::string& key, int32_t v) {
  set_value(key, Value::make_int(ValueType::I32, v));
}
void GgufWriter::set_u64(const std::string& key, uint64_t v) {
  set_value(key, Value::make_uint(ValueType::U64, v));
}
void GgufWriter::set_i64(const std::string& key, int64_t v) {
  set_value(key, Value::make_int(ValueType::I64, v));
}
void GgufWriter::set_f32(const std::string& key, float v) {
  set_value(key, Value::make_float(ValueType::F32, v));
}
void GgufWriter::set_f64(const std::string& key, double v) {
  set_value(key, Value::make_float(ValueType::F64, v));
}
void GgufWriter::set_bool(const std::string& key, bool v) {
  set_value(key, Value::make_bool(v));
}
void GgufWriter::set_string(const std::string& key, std::string v) {
  set_value(key, Value::make_string(std::move(v)));
}
void GgufWriter::set_string_array(const std::string& key, std::vector<std::string> v) {
  set_value(key, Value::make_array(Array::of_strings(std::move(v))));
}
void GgufWriter::set_f32_array(const std::string& key, std::vector<float> v) {
  set_value(key, Value::make_array(Array::of_f32(v)));
}
void GgufWriter::set_i32_array(const std::string& key, std::vector<int32_t> v) {
  set_value(key, Value::make_array(Array::of_i32(v)));
}

uint64_t GgufWriter::checked_tensor_bytes(const std::string& name, DType type,
                                          const std::vector<int64_t>& ne) const {
  const std::string what = "gguf writer: tensor '" + name + "'";
  if (name.empty()) throw Error("gguf writer: tensor name is empty");
  if (name.size() > kMaxTensorNameBytes) {
    throw Error(what + ": name is longer than " + std::to_string(kMaxTensorNameBytes) + " bytes");
  }
  for (const auto& t : tensors_) {
    if (t.name == name) throw Error(what + ": duplicate tensor name");
  }
  const auto info = dtype_info(static_cast<uint32_t>(type));
  if (!info) throw Error(what + ": unknown type id " + std::to_string(static_cast<uint32_t>(type)));
  if (ne.empty() || ne.size() > kMaxDims) {
    throw Error(what + ": n_dims " + std::to_string(ne.size()) + " is outside 1.." +
                std::to_string(kMaxDims));
  }
  uint64_t n = 1;
  for (size_t d = 0; d < ne.size(); ++d) {
    if (ne[d] < 1) {
      throw Error(what + ": ne[" + std::to_string(d) + "]=" + std::to_string(ne[d]) +
                  " must be at least 1");
    }
    const auto next = checked_mul(n, static_cast<uint64_t>(ne[d]));
    if (!next || *next > static_cast<uint64_t>(INT64_MAX)) {
      throw Error(what + ": element count overflows");
    }
    n = *next;
  }
  if (ne[0] % info->block_size != 0) {
    throw Error(what + ": row length ne[0]=" + std::to_string(ne[0]) +
                " is not a multiple of the " + std::string(info->name) + " block size " +
                std::to_string(info->block_size));
  }
  const auto bytes = checked_mul(n / static_cast<uint64_t>(info->block_size), info->type_size);
  if (!bytes) throw Error(what + ": byte size overflows");
  return *bytes;
}

void GgufWriter::add_tensor(const std::string& name, DType type, std::vector<int64_t> ne,
                            const void* data, size_t n_bytes) {
  const uint64_t expected = checked_tensor_bytes(name, type, ne);
  if (n_bytes != expected) {
    throw Error("gguf writer: tensor '" + name + "': got " + std::to_string(n_bytes) +
                " bytes, its shape and type need " + std::to_string(expected));
  }
  if (!data) throw Error("gguf writer: tensor '" + name + "': data is null");
  const auto* p = static_cast<const uint8_t*>(data);
  tensors_.push_back(
      PendingTensor{name, type, std::move(ne), expected, std::vector<uint8_t>(p, p + n_bytes), {}});
}

void GgufWriter::add_tensor_lazy(const std::string& name, DType type, std::vector<int64_t> ne,
                                 std::function<void(uint8_t* dst)> fill) {
  const uint64_t bytes = checked_tensor_bytes(name, type, ne);
  if (!fill) throw Error("gguf writer: tensor '" + name + "': fill callback is empty");
  tensors_.push_back(PendingTensor{name, type, std::move(ne), bytes, {}, std::move(fill)});
}

uint64_t GgufWriter::alignment() const {
  for (const auto& [k, v] : metadata_) {
    if (k == "general.alignment") return *v.as_uint();  // validated in set_value
  }
  return kDefaultAlignment;
}

void GgufWriter::emit(const Sink& sink) const {
  const uint64_t align = alignment();
  std::vector<uint64_t> offsets;  // relative to the data section
  uint64_t end = 0;
  for (const auto& t : tensors_) {
    offsets.push_back(align_or_throw(end, align));
    const auto next = checked_add(offsets.back(), t.n_bytes);
    if (!next) throw Error("gguf writer: file layout overflows 64 bits");
    end = *next;
  }

  std::vector<uint8_t> head;
  put_bytes(head, "GGUF", 4);
  put<uint32_t>(head, kWriteVersion);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, metadata_.size());
  for (const auto& [key, value] : metadata_) {
    put_string(head, key);
    put<uint32_t>(head, static_cast<uint32_t>(value.type));
    put_value(head, value);
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const PendingTensor& t = tensors_[i];
    put_string(head, t.name);
    put<uint32_t>(head, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) put<int64_t>(head, d);
    put<uint32_t>(head, static_cast<uint32_t>(t.type));
    put<uint64_t>(head, offsets[i]);
  }
  // A file without tensors ends right after its header, like the vocab-only files that
  // llama.cpp writes; otherwise pad up to the data section.
  if (!tensors_.empty()) head.resize(align_or_throw(head.size(), align), 0);
  sink(head.data(), head.size());

  // Tensor data, each tensor padded to the alignment (the last one too, as ggml does,
  // so that every tensor's storage ends on an aligned boundary).
  std::vector<uint8_t> scratch;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const PendingTensor& t = tensors_[i];
    const uint8_t* bytes = t.data.data();
    if (t.fill) {
      scratch.assign(t.n_bytes, 0);
      t.fill(scratch.data());
      bytes = scratch.data();
    }
    sink(bytes, t.n_bytes);
    const uint64_t padded = align_or_throw(t.n_bytes, align);
    if (padded > t.n_bytes) {
      const std::vector<uint8_t> zeros(padded - t.n_bytes, 0);
      sink(zeros.data(), zeros.size());
    }
  }
}

std::vector<uint8_t> GgufWriter::write_to_buffer() const {
  std::vector<uint8_t> out;
  emit([&](const uint8_t* p, size_t n) { out.insert(out.end(), p, p + n); });
  return out;
}

void GgufWriter::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error(tmp + ": cannot create: " + std::generic_category().message(errno));
  try {
    emit([&](const uint8_t* p, size_t n) {
      if (n && std::fwrite(p, 1, n, f) != n) {
        throw Error(tmp + ": write failed: " + std::generic_category().message(errno));
      }
    });
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0) {
    std::remove(tmp.c_str());
    throw Error(tmp + ": close failed: " + std::generic_category().message(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename from " + tmp + ": " + std::generic_category().message(err));
  }
}

}  // namespace strata::gguf
