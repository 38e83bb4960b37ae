#include "gguf/value.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"

namespace strata::gguf {
namespace {

constexpr size_t kUintSlot = 0;
constexpr size_t kIntSlot = 1;
constexpr size_t kFloatSlot = 2;
constexpr size_t kStringSlot = 3;
constexpr size_t kArraySlot = 4;

// Which alternative of Array::Storage holds elements of type `t`.
size_t array_slot(ValueType t) {
  if (is_unsigned_type(t) || t == ValueType::BOOL) return kUintSlot;
  if (is_signed_type(t)) return kIntSlot;
  if (is_float_type(t)) return kFloatSlot;
  if (t == ValueType::STRING) return kStringSlot;
  return kArraySlot;
}

bool uint_fits(ValueType t, uint64_t v) {
  switch (t) {
    case ValueType::U8:
      return v <= 0xFF;
    case ValueType::U16:
      return v <= 0xFFFF;
    case ValueType::U32:
      return v <= 0xFFFFFFFFu;
    case ValueType::U64:
      return true;
    case ValueType::BOOL:
      return v <= 1;
    default:
      return false;
  }
}

bool int_fits(ValueType t, int64_t v) {
  switch (t) {
    case ValueType::I8:
      return v >= INT8_MIN && v <= INT8_MAX;
    case ValueType::I16:
      return v >= INT16_MIN && v <= INT16_MAX;
    case ValueType::I32:
      return v >= INT32_MIN && v <= INT32_MAX;
    case ValueType::I64:
      return true;
    default:
      return false;
  }
}

// Converting a finite double outside float's range to float is undefined behaviour,
// so F32 values are range-checked before any cast.
bool float_fits(ValueType t, double v) {
  if (t == ValueType::F64) return true;
  if (t != ValueType::F32) return false;
  return !std::isfinite(v) || std::fabs(v) <= static_cast<double>(FLT_MAX);
}

std::string type_error(ValueType t, const std::string& v) {
  return "value " + v + " does not fit type " + std::string(value_type_name(t));
}

std::string format_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

void validate_at_depth(const Value& v, const std::string& what, int depth);

void validate_array(const Array& a, const std::string& what, int depth) {
  if (depth > kMaxArrayDepth) {
    throw Error(what + ": arrays nest deeper than " + std::to_string(kMaxArrayDepth));
  }
  if (!is_known_value_type(static_cast<uint32_t>(a.elem_type))) {
    throw Error(what + ": unknown array element type " +
                std::to_string(static_cast<uint32_t>(a.elem_type)));
  }
  if (a.items.index() != array_slot(a.elem_type)) {
    throw Error(what + ": array storage does not match element type " +
                std::string(value_type_name(a.elem_type)));
  }
  if (const auto* u = a.uints()) {
    for (uint64_t x : *u) {
      if (!uint_fits(a.elem_type, x))
        throw Error(what + ": " + type_error(a.elem_type, std::to_string(x)));
    }
  } else if (const auto* s = a.ints()) {
    for (int64_t x : *s) {
      if (!int_fits(a.elem_type, x))
        throw Error(what + ": " + type_error(a.elem_type, std::to_string(x)));
    }
  } else if (const auto* f = a.floats()) {
    for (double x : *f) {
      if (!float_fits(a.elem_type, x))
        throw Error(what + ": " + type_error(a.elem_type, format_double(x)));
    }
  } else if (const auto* arrays = a.arrays()) {
    for (size_t i = 0; i < arrays->size(); ++i) {
      const Value& elem = (*arrays)[i];
      const std::string elem_what = what + "[" + std::to_string(i) + "]";
      if (elem.type != ValueType::ARRAY)
        throw Error(elem_what + ": element of an array of arrays is not an array");
      validate_at_depth(elem, elem_what, depth);
    }
  }
}

// `depth` counts the arrays enclosing `v`.
void validate_at_depth(const Value& v, const std::string& what, int depth) {
  const ValueType t = v.type;
  if (!is_known_value_type(static_cast<uint32_t>(t))) {
    throw Error(what + ": unknown value type " + std::to_string(static_cast<uint32_t>(t)));
  }
  const std::string mismatch =
      what + ": value storage does not match type " + std::string(value_type_name(t));
  if (is_unsigned_type(t)) {
    const auto* x = std::get_if<uint64_t>(&v.data);
    if (!x) throw Error(mismatch);
    if (!uint_fits(t, *x)) throw Error(what + ": " + type_error(t, std::to_string(*x)));
  } else if (is_signed_type(t)) {
    const auto* x = std::get_if<int64_t>(&v.data);
    if (!x) throw Error(mismatch);
    if (!int_fits(t, *x)) throw Error(what + ": " + type_error(t, std::to_string(*x)));
  } else if (is_float_type(t)) {
    const auto* x = std::get_if<double>(&v.data);
    if (!x) throw Error(mismatch);
    if (!float_fits(t, *x)) throw Error(what + ": " + type_error(t, format_double(*x)));
  } else if (t == ValueType::BOOL) {
    if (!std::holds_alternative<bool>(v.data)) throw Error(mismatch);
  } else if (t == ValueType::STRING) {
    if (!std::holds_alternative<std::string>(v.data)) throw Error(mismatch);
  } else {
    const auto* a = std::get_if<std::shared_ptr<const Array>>(&v.data);
    if (!a || !*a) throw Error(mismatch);
    validate_array(**a, what, depth + 1);
  }
}

}  // namespace

bool is_known_value_type(uint32_t id) {
  return id <= static_cast<uint32_t>(ValueType::F64);
}

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8:
      return "u8";
    case ValueType::I8:
      return "i8";
    case ValueType::U16:
      return "u16";
    case ValueType::I16:
      return "i16";
    case ValueType::U32:
      return "u32";
    case ValueType::I32:
      return "i32";
    case ValueType::F32:
      return "f32";
    case ValueType::BOOL:
      return "bool";
    case ValueType::STRING:
      return "string";
    case ValueType::ARRAY:
      return "array";
    case ValueType::U64:
      return "u64";
    case ValueType::I64:
      return "i64";
    case ValueType::F64:
      return "f64";
  }
  return "unknown";
}

size_t value_type_size(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::BOOL:
      return 1;
    case ValueType::U16:
    case ValueType::I16:
      return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32:
      return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
      return 8;
    case ValueType::STRING:
    case ValueType::ARRAY:
      return 0;
  }
  return 0;
}

bool is_unsigned_type(ValueType t) {
  return t == ValueType::U8 || t == ValueType::U16 || t == ValueType::U32 || t == ValueType::U64;
}
bool is_signed_type(ValueType t) {
  return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}
bool is_float_type(ValueType t) {
  return t == ValueType::F32 || t == ValueType::F64;
}

Value Value::make_uint(ValueType type, uint64_t v) {
  if (!is_unsigned_type(type) || !uint_fits(type, v))
    throw Error(type_error(type, std::to_string(v)));
  return Value{type, v};
}

Value Value::make_int(ValueType type, int64_t v) {
  if (!is_signed_type(type) || !int_fits(type, v)) throw Error(type_error(type, std::to_string(v)));
  return Value{type, v};
}

Value Value::make_float(ValueType type, double v) {
  if (!float_fits(type, v)) throw Error(type_error(type, format_double(v)));
  // Store exactly what the file will hold, so a written value reads back equal.
  if (type == ValueType::F32) v = static_cast<double>(static_cast<float>(v));
  return Value{type, v};
}

Value Value::make_bool(bool v) {
  return Value{ValueType::BOOL, v};
}

Value Value::make_string(std::string v) {
  return Value{ValueType::STRING, std::move(v)};
}

Value Value::make_array(Array a) {
  return Value{ValueType::ARRAY, std::make_shared<const Array>(std::move(a))};
}

std::optional<uint64_t> Value::as_uint() const {
  if (const auto* u = std::get_if<uint64_t>(&data); u && is_unsigned_type(type)) return *u;
  if (const auto* i = std::get_if<int64_t>(&data); i && is_signed_type(type) && *i >= 0) {
    return static_cast<uint64_t>(*i);
  }
  return std::nullopt;
}

std::optional<int64_t> Value::as_int() const {
  if (const auto* i = std::get_if<int64_t>(&data); i && is_signed_type(type)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&data);
      u && is_unsigned_type(type) && *u <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(*u);
  }
  return std::nullopt;
}

std::optional<double> Value::as_float() const {
  if (const auto* d = std::get_if<double>(&data); d && is_float_type(type)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&data); u && is_unsigned_type(type)) {
    return static_cast<double>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&data); i && is_signed_type(type)) {
    return static_cast<double>(*i);
  }
  return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
  if (const auto* b = std::get_if<bool>(&data); b && type == ValueType::BOOL) return *b;
  return std::nullopt;
}

const std::string* Value::as_string() const {
  return type == ValueType::STRING ? std::get_if<std::string>(&data) : nullptr;
}

const Array* Value::as_array() const {
  if (type != ValueType::ARRAY) return nullptr;
  const auto* p = std::get_if<std::shared_ptr<const Array>>(&data);
  return p ? p->get() : nullptr;
}

std::string Value::to_display(size_t max_items) const {
  constexpr size_t kMaxChars = 64;
  if (const auto* s = as_string()) {
    if (s->size() <= kMaxChars) return "\"" + *s + "\"";
    return "\"" + s->substr(0, kMaxChars) + "...\" (" + std::to_string(s->size()) + " bytes)";
  }
  if (const auto* a = as_array()) {
    std::string out = "[";
    const size_t n = a->size();
    for (size_t i = 0; i < n && i < max_items; ++i) {
      if (i) out += ", ";
      out += a->at(i).to_display(max_items);
    }
    if (n > max_items) out += ", ...";
    out += "] (" + std::to_string(n) + " x " + std::string(value_type_name(a->elem_type)) + ")";
    return out;
  }
  if (const auto b = as_bool()) return *b ? "true" : "false";
  if (const auto* d = std::get_if<double>(&data)) return format_double(*d);
  if (const auto* u = std::get_if<uint64_t>(&data)) return std::to_string(*u);
  if (const auto* i = std::get_if<int64_t>(&data)) return std::to_string(*i);
  return "<invalid " + std::string(value_type_name(type)) + ">";
}

bool operator==(const Value& a, const Value& b) {
  if (a.type != b.type || a.data.index() != b.data.index()) return false;
  const auto* pa = std::get_if<std::shared_ptr<const Array>>(&a.data);
  if (!pa) return a.data == b.data;
  const auto& pb = std::get<std::shared_ptr<const Array>>(b.data);
  if (!*pa || !pb) return *pa == pb;
  return **pa == *pb;
}

bool operator==(const Array& a, const Array& b) {
  return a.elem_type == b.elem_type && a.items == b.items;
}

Array Array::of_uints(ValueType elem, std::vector<uint64_t> v) {
  if (!is_unsigned_type(elem) && elem != ValueType::BOOL) {
    throw Error("array of " + std::string(value_type_name(elem)) +
                " cannot hold unsigned integers");
  }
  for (uint64_t x : v) {
    if (!uint_fits(elem, x)) throw Error(type_error(elem, std::to_string(x)));
  }
  return Array{elem, std::move(v)};
}

Array Array::of_ints(ValueType elem, std::vector<int64_t> v) {
  if (!is_signed_type(elem)) {
    throw Error("array of " + std::string(value_type_name(elem)) + " cannot hold signed integers");
  }
  for (int64_t x : v) {
    if (!int_fits(elem, x)) throw Error(type_error(elem, std::to_string(x)));
  }
  return Array{elem, std::move(v)};
}

Array Array::of_floats(ValueType elem, std::vector<double> v) {
  if (!is_float_type(elem)) {
    throw Error("array of " + std::string(value_type_name(elem)) + " cannot hold floats");
  }
  for (double& x : v) {
    if (!float_fits(elem, x)) throw Error(type_error(elem, format_double(x)));
    if (elem == ValueType::F32) x = static_cast<double>(static_cast<float>(x));
  }
  return Array{elem, std::move(v)};
}

Array Array::of_strings(std::vector<std::string> v) {
  return Array{ValueType::STRING, std::move(v)};
}

Array Array::of_arrays(std::vector<Array> v) {
  std::vector<Value> values;
  values.reserve(v.size());
  for (auto& a : v) values.push_back(Value::make_array(std::move(a)));
  return Array{ValueType::ARRAY, std::move(values)};
}

Array Array::of_f32(const std::vector<float>& v) {
  return Array{ValueType::F32, std::vector<double>(v.begin(), v.end())};
}

Array Array::of_i32(const std::vector<int32_t>& v) {
  return Array{ValueType::I32, std::vector<int64_t>(v.begin(), v.end())};
}

size_t Array::size() const {
  return std::visit([](const auto& vec) { return vec.size(); }, items);
}

Value Array::at(size_t i) const {
  if (i >= size()) {
    throw Error("array index " + std::to_string(i) + " out of range (size " +
                std::to_string(size()) + ")");
  }
  if (const auto* u = uints()) {
    if (elem_type == ValueType::BOOL) return Value{ValueType::BOOL, (*u)[i] != 0};
    return Value{elem_type, (*u)[i]};
  }
  if (const auto* s = ints()) return Value{elem_type, (*s)[i]};
  if (const auto* f = floats()) return Value{elem_type, (*f)[i]};
  if (const auto* str = strings()) return Value{ValueType::STRING, (*str)[i]};
  return (*arrays())[i];
}

void validate_value(const Value& v, const std::string& what) {
  validate_at_depth(v, what, 0);
}

}  // namespace strata::gguf
