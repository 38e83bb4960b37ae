// GgufFile's accessors: metadata lookup with typed, range-checked getters, and tensor lookup.

#include <cfloat>
#include <cmath>

#include "core/checked.h"
#include "core/error.h"
#include "gguf/gguf.h"

namespace strata::gguf {
namespace {

std::string type_text(const Value& v) {
  if (const Array* a = v.as_array()) {
    return "array of " + std::string(value_type_name(a->elem_type));
  }
  return std::string(value_type_name(v.type));
}

}  // namespace

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

const Value* GgufFile::find(std::string_view key) const {
  const auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

uint64_t GgufFile::value_offset(std::string_view key) const {
  const auto it = key_index_.find(key);
  return it == key_index_.end() ? 0 : value_offsets_[it->second];
}

void GgufFile::fail_key(std::string_view key, const std::string& problem) const {
  std::string msg = name_ + ": key '" + std::string(key) + "'";
  if (has(key)) msg += " at offset " + std::to_string(value_offset(key));
  throw Error(msg + ": " + problem);
}

const Value& GgufFile::require(std::string_view key) const {
  const Value* v = find(key);
  if (!v) fail_key(key, "not found");
  return *v;
}

// Each conversion below has a throwing form used by both the plain and the fallback getter.

std::string GgufFile::get_string(std::string_view key) const {
  const Value& v = require(key);
  if (const std::string* s = v.as_string()) return *s;
  fail_key(key, "has type " + type_text(v) + ", expected string");
}

std::string GgufFile::get_string(std::string_view key, std::string_view fallback) const {
  return has(key) ? get_string(key) : std::string(fallback);
}

uint64_t GgufFile::get_uint(std::string_view key) const {
  const Value& v = require(key);
  if (const auto u = v.as_uint()) return *u;
  if (v.is_integer()) fail_key(key, "value " + v.to_display() + " is negative, expected unsigned");
  fail_key(key, "has type " + type_text(v) + ", expected an integer");
}

uint64_t GgufFile::get_uint(std::string_view key, uint64_t fallback) const {
  return has(key) ? get_uint(key) : fallback;
}

int64_t GgufFile::get_int(std::string_view key) const {
  const Value& v = require(key);
  if (const auto i = v.as_int()) return *i;
  if (v.is_integer()) fail_key(key, "value " + v.to_display() + " does not fit in int64");
  fail_key(key, "has type " + type_text(v) + ", expected an integer");
}

int64_t GgufFile::get_int(std::string_view key, int64_t fallback) const {
  return has(key) ? get_int(key) : fallback;
}

double GgufFile::get_float(std::string_view key) const {
  const Value& v = require(key);
  if (const auto d = v.as_float()) return *d;
  fail_key(key, "has type " + type_text(v) + ", expected a number");
}

double GgufFile::get_float(std::string_view key, double fallback) const {
  return has(key) ? get_float(key) : fallback;
}

bool GgufFile::get_bool(std::string_view key) const {
  const Value& v = require(key);
  if (const auto b = v.as_bool()) return *b;
  fail_key(key, "has type " + type_text(v) + ", expected bool");
}

bool GgufFile::get_bool(std::string_view key, bool fallback) const {
  return has(key) ? get_bool(key) : fallback;
}

const Array& GgufFile::get_array(std::string_view key) const {
  const Value& v = require(key);
  if (const Array* a = v.as_array()) return *a;
  fail_key(key, "has type " + type_text(v) + ", expected an array");
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  const Array& a = get_array(key);
  if (const auto* s = a.strings()) return *s;
  fail_key(key, "is an array of " + std::string(value_type_name(a.elem_type)) +
                    ", expected an array of string");
}

std::vector<float> GgufFile::get_float_array(std::string_view key) const {
  const Array& a = get_array(key);
  std::vector<float> out;
  out.reserve(a.size());
  if (const auto* f = a.floats()) {
    for (size_t i = 0; i < f->size(); ++i) {
      const double d = (*f)[i];
      // Casting a finite double beyond float's range is undefined behaviour.
      if (std::isfinite(d) && std::fabs(d) > static_cast<double>(FLT_MAX)) {
        fail_key(key, "element " + std::to_string(i) + " value " + std::to_string(d) +
                          " does not fit in float");
      }
      out.push_back(static_cast<float>(d));
    }
  } else if (const auto* s = a.ints()) {
    for (int64_t x : *s) out.push_back(static_cast<float>(x));
  } else if (const auto* u = a.uints(); u && a.elem_type != ValueType::BOOL) {
    for (uint64_t x : *u) out.push_back(static_cast<float>(x));
  } else {
    fail_key(key, "is an array of " + std::string(value_type_name(a.elem_type)) +
                      ", expected an array of numbers");
  }
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  const Array& a = get_array(key);
  if (const auto* s = a.ints()) return *s;
  if (const auto* u = a.uints(); u && a.elem_type != ValueType::BOOL) {
    std::vector<int64_t> out;
    out.reserve(u->size());
    for (size_t i = 0; i < u->size(); ++i) {
      if ((*u)[i] > static_cast<uint64_t>(INT64_MAX)) {
        fail_key(key, "element " + std::to_string(i) + " value " + std::to_string((*u)[i]) +
                          " does not fit in int64");
      }
      out.push_back(static_cast<int64_t>((*u)[i]));
    }
    return out;
  }
  fail_key(key, "is an array of " + std::string(value_type_name(a.elem_type)) +
                    ", expected an array of integers");
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& GgufFile::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) throw Error(name_ + ": tensor '" + std::string(name) + "' not found");
  return *t;
}

std::span<const uint8_t> GgufFile::tensor_bytes(const TensorInfo& t) const {
  // Tensors read from this file were validated at open; this guards against a
  // TensorInfo taken from another file or edited by the caller.
  const auto begin = checked_add(data_offset_, t.offset);
  const auto end = begin ? checked_add(*begin, t.n_bytes) : std::nullopt;
  if (!end || *end > bytes_.size()) {
    throw Error(name_ + ": tensor '" + t.name + "' data (offset " + std::to_string(t.offset) +
                ", " + std::to_string(t.n_bytes) + " bytes) lies outside the file");
  }
  return {bytes_.data() + *begin, static_cast<size_t>(t.n_bytes)};
}

const uint8_t* GgufFile::tensor_data(const TensorInfo& t) const {
  return tensor_bytes(t).data();
}

uint8_t* GgufFile::writable_tensor_data(const TensorInfo& t) {
  const uint8_t* p = tensor_data(t);  // bounds check
  uint8_t* base = bytes_.writable_data();
  return base == nullptr ? nullptr : base + (p - bytes_.data());
}

}  // namespace strata::gguf
