// Runtime values of the template interpreter, modelled on the Python objects Jinja2 works
// with: lists and dicts are shared, mutable reference objects; strings are UTF-8 and
// behave like Python `str`; dicts keep insertion order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace strata::chat {

class Renderer;
class Value;
struct ListObj;
struct DictObj;
struct FunctionObj;
using ListPtr = std::shared_ptr<ListObj>;
using DictPtr = std::shared_ptr<DictObj>;
using FuncPtr = std::shared_ptr<FunctionObj>;

// Thrown by value operations, filters and methods that do not know where in the template
// they run; the renderer catches it and rethrows strata::Error with the template position.
class TemplateRuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const std::string& message);

enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Function };

class Value {
 public:
  // Strings are immutable and shared, so copying a Value never copies text.
  using Text = std::shared_ptr<const std::string>;
  struct UndefinedTag {
    Text hint;  // what was missing, e.g. "'dict object' has no attribute 'x'"; may be null
  };
  struct NoneTag {};

  Value() = default;  // undefined
  static Value undefined(std::string hint = {}) {
    return Value(Storage(UndefinedTag{
        hint.empty() ? nullptr : std::make_shared<const std::string>(std::move(hint))}));
  }
  static Value none() { return Value(Storage(NoneTag{})); }
  static Value boolean(bool b) { return Value(Storage(b)); }
  static Value integer(int64_t i) { return Value(Storage(i)); }
  static Value number(double d) { return Value(Storage(d)); }
  static Value string(std::string s);  // charges the render's budget (budget.h)
  static Value make_list(std::vector<Value> items = {}, bool is_tuple = false);
  static Value make_dict();
  static Value from(ListPtr p) { return Value(Storage(std::move(p))); }
  static Value from(DictPtr p) { return Value(Storage(std::move(p))); }
  static Value from(FuncPtr p) { return Value(Storage(std::move(p))); }
  static Value function(std::string name, std::function<Value(Renderer&, struct CallArgs&)> fn);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_number() const {
    return is_bool() || is_int() || is_float();
  }  // Python numbers include bool
  bool is_integral() const { return is_bool() || is_int(); }
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_function() const { return kind() == Kind::Function; }
  bool is_container() const { return is_list() || is_dict() || is_function(); }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const;    // bool or int
  double as_double() const;  // bool, int or float
  const std::string& str() const { return *std::get<Text>(v_); }
  ListObj& list() const { return *std::get<ListPtr>(v_); }
  DictObj& dict() const { return *std::get<DictPtr>(v_); }
  FunctionObj& func() const { return *std::get<FuncPtr>(v_); }
  const ListPtr& list_ptr() const { return std::get<ListPtr>(v_); }
  const DictPtr& dict_ptr() const { return std::get<DictPtr>(v_); }
  const std::string& undefined_hint() const;
  // Identity of a list, dict or function object (Python `is`); null for other kinds.
  const void* identity() const;

  // The string's text, moved out when this value holds the only reference (so that
  // `a + b + c` appends in place instead of copying the growing left side).
  std::string take_str();

  // Moves out the container pointer when this value holds its last reference, so that a
  // dying container can hand its children to the iterative destructor.
  std::shared_ptr<void> release_if_unique();

 private:
  using Storage =
      std::variant<UndefinedTag, NoneTag, bool, int64_t, double, Text, ListPtr, DictPtr, FuncPtr>;
  explicit Value(Storage s) : v_(std::move(s)) {}
  Storage v_;
};

struct ListObj {
  std::vector<Value> items;
  bool is_tuple = false;
  uint64_t charged = 0;  // bytes charged to the render's budget; given back on destruction
  ListObj() = default;
  ListObj(const ListObj&) = delete;
  ListObj& operator=(const ListObj&) = delete;
  ~ListObj();
  void clear();                      // drops the items through the iterative destructor
  void account(size_t added_items);  // charges items appended to `items` directly
};

// Plain dicts expose Python dict methods; namespaces and loop objects expose only their
// items as attributes, like Jinja2's Namespace and LoopContext.
enum class DictFlavor : uint8_t { Plain, Namespace, Loop };

struct DictObj {
  std::vector<std::pair<Value, Value>> entries;  // insertion order
  DictFlavor flavor = DictFlavor::Plain;
  uint64_t charged = 0;  // bytes charged to the render's budget; given back on destruction

  DictObj() = default;
  DictObj(const DictObj&) = delete;
  DictObj& operator=(const DictObj&) = delete;
  ~DictObj();

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
  bool erase(const Value& key);
  void clear();
  void account(size_t added_entries);  // charges entries appended to `entries` directly
  size_t size() const { return entries.size(); }

 private:
  void rebuild_index() const;
  // Lookup index for large dicts, keyed by hash_key(); small dicts scan linearly.
  mutable std::unique_ptr<std::unordered_map<std::string, size_t>> index_;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct FunctionObj {
  std::string name;
  std::function<Value(Renderer&, CallArgs&)> call;
};

// Python semantics used throughout the interpreter.
bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
int compare(const Value& a, const Value& b);  // <0, 0, >0; throws for unorderable types
std::string type_name(const Value& v);        // Python type name: 'str', 'int', 'NoneType', ...
// Python str() and repr(); undefined prints as "". Containers nest at most kMaxValueDepth
// deep (cycles included) and the text may not exceed max_bytes.
constexpr int kMaxValueDepth = 256;
constexpr size_t kDefaultMaxText = size_t{1} << 26;
std::string to_str(const Value& v, size_t max_bytes = kDefaultMaxText);
std::string to_repr(const Value& v, size_t max_bytes = kDefaultMaxText);
std::string format_float(double d);           // Python repr(float): 1.0, 0.1, 1e-05, inf
std::string repr_string(std::string_view s);  // Python repr(str) with its quote choice
// Hashable key for dict lookups: 1, 1.0 and True are the same key, as in Python.
std::string hash_key(const Value& key);

}  // namespace strata::chat
