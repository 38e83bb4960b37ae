// GGUF metadata values: scalars, strings and (possibly nested) arrays.
//
// A Value is plain data. Scalars widen to one of four representations (uint64_t for
// U8..U64, int64_t for I8..I64, double for F32/F64, bool), while `type` keeps the exact
// GGUF type so that a value read from one file is written back unchanged. Arrays keep
// their elements in one typed vector (a 150k-token vocabulary is one
// std::vector<std::string>, not 150k Values) behind a shared_ptr, so copying a Value
// that holds a vocabulary is cheap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace strata::gguf {

enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

// Arrays may hold arrays; a value nested deeper than this is rejected by the reader
// and the writer (a top-level array has depth 1).
inline constexpr int kMaxArrayDepth = 8;

// True for the ids 0..12 listed above.
bool is_known_value_type(uint32_t id);

// "u8", "i32", "f32", "bool", "string", "array", ...; "unknown" for other ids.
std::string_view value_type_name(ValueType t);

// Bytes of a fixed-width type's encoding; 0 for STRING and ARRAY.
size_t value_type_size(ValueType t);

bool is_unsigned_type(ValueType t);  // U8, U16, U32, U64
bool is_signed_type(ValueType t);    // I8, I16, I32, I64
bool is_float_type(ValueType t);     // F32, F64

struct Array;

struct Value {
  using Storage =
      std::variant<uint64_t, int64_t, double, bool, std::string, std::shared_ptr<const Array>>;

  ValueType type = ValueType::U8;
  Storage data = uint64_t{0};

  // Factories keep `data` consistent with `type`; they throw strata::Error when the
  // value does not fit the type (e.g. make_uint(U8, 300)).
  static Value make_uint(ValueType type, uint64_t v);  // U8, U16, U32, U64
  static Value make_int(ValueType type, int64_t v);    // I8, I16, I32, I64
  static Value make_float(ValueType type, double v);   // F32 (rounded to float), F64
  static Value make_bool(bool v);
  static Value make_string(std::string v);
  static Value make_array(Array a);

  bool is_integer() const { return is_unsigned_type(type) || is_signed_type(type); }
  bool is_float() const { return is_float_type(type); }

  // Conversions; nullopt when the type is incompatible or the value is out of range.
  std::optional<uint64_t> as_uint() const;  // integer types, value >= 0
  std::optional<int64_t> as_int() const;    // integer types, value <= INT64_MAX
  std::optional<double> as_float() const;   // float and integer types
  std::optional<bool> as_bool() const;      // BOOL only
  const std::string* as_string() const;     // STRING only, else nullptr
  const Array* as_array() const;            // ARRAY only, else nullptr

  // Short human-readable rendering for tools and error messages; arrays show at most
  // `max_items` elements and long strings are cut.
  std::string to_display(size_t max_items = 8) const;
};

bool operator==(const Value& a, const Value& b);

struct Array {
  // U8..U64 and BOOL (0/1) elements live in `uints`, I8..I64 in `ints`, F32/F64 in
  // `floats`, STRING in `strings`, and ARRAY (arrays of arrays) in `arrays`, each of whose
  // Values has type ARRAY.
  using Storage = std::variant<std::vector<uint64_t>, std::vector<int64_t>, std::vector<double>,
                               std::vector<std::string>, std::vector<Value>>;

  ValueType elem_type = ValueType::U8;
  Storage items;

  // Factories; they throw strata::Error when an element does not fit `elem`.
  static Array of_uints(ValueType elem, std::vector<uint64_t> v);  // U8..U64 or BOOL
  static Array of_ints(ValueType elem, std::vector<int64_t> v);    // I8..I64
  static Array of_floats(ValueType elem, std::vector<double> v);   // F32 or F64
  static Array of_strings(std::vector<std::string> v);
  static Array of_arrays(std::vector<Array> v);
  static Array of_f32(const std::vector<float>& v);
  static Array of_i32(const std::vector<int32_t>& v);

  size_t size() const;
  Value at(size_t i) const;  // materializes element i; throws strata::Error when out of range

  // Direct access to the typed storage; nullptr when the elements are stored differently.
  const std::vector<uint64_t>* uints() const { return std::get_if<std::vector<uint64_t>>(&items); }
  const std::vector<int64_t>* ints() const { return std::get_if<std::vector<int64_t>>(&items); }
  const std::vector<double>* floats() const { return std::get_if<std::vector<double>>(&items); }
  const std::vector<std::string>* strings() const {
    return std::get_if<std::vector<std::string>>(&items);
  }
  const std::vector<Value>* arrays() const { return std::get_if<std::vector<Value>>(&items); }
};

bool operator==(const Array& a, const Array& b);

// Checks that a Value built by hand is well formed: `data` holds the representation
// that `type` calls for, every scalar fits its type, array elements match elem_type,
// and arrays nest at most kMaxArrayDepth deep. Throws strata::Error naming `what`.
void validate_value(const Value& v, const std::string& what);

}  // namespace strata::gguf
