// Built-in filters, tests, methods of Python objects, global functions and operators,
// shared by the renderer. Each throws TemplateRuntimeError (via fail()) on misuse; the
// renderer adds the template position.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "chat_template/ast.h"
#include "chat_template/renderer.h"
#include "chat_template/value.h"

namespace strata::chat {

// Binds call arguments to a Python-style parameter list: positional arguments fill the
// parameters in order, keywords by name; unknown or duplicate arguments are errors.
class BoundArgs {
 public:
  BoundArgs(const CallArgs& call, std::string_view fn_name,
            std::initializer_list<std::string_view> params, size_t required = 0);
  bool has(size_t i) const { return i < bound_.size() && bound_[i] != nullptr; }
  const Value& get(size_t i) const;  // undefined when not given
  Value get_or_none(size_t i) const { return has(i) ? get(i) : Value::none(); }
  int64_t get_int(size_t i, int64_t fallback) const;
  bool get_bool(size_t i, bool fallback) const;  // by truthiness
  std::string get_string(size_t i, std::string fallback) const;

 private:
  std::string fn_name_;
  std::vector<std::string_view> names_;
  std::vector<const Value*> bound_;
};

// filters.cpp / filters_seq.cpp
Value apply_filter(Renderer& r, std::string_view name, Value operand, CallArgs& args);
bool has_filter(std::string_view name);
Value apply_seq_filter(Renderer& r, std::string_view name, Value& operand, CallArgs& args,
                       bool& handled);
bool has_seq_filter(std::string_view name);

// tests.cpp
bool apply_test(Renderer& r, std::string_view name, const Value& operand, CallArgs& args);

// methods.cpp: a bound method of a str, list or dict, or undefined if there is none.
Value get_method(const Value& self, std::string_view name);

// globals.cpp: range, namespace, dict, raise_exception, strftime_now, cycler, joiner.
Value lookup_global(std::string_view name);

// operators.cpp: Python arithmetic and containment.
Value binary_op(Renderer& r, BinaryOp op, Value a, Value b);
bool contains(const Value& container, const Value& item);
Value slice_value(const Value& object, const Value& start, const Value& stop, const Value& step);
// Items a `for` loop visits: list elements, dict keys, string characters.
std::vector<Value> iterate(const Value& v);

// json.cpp: Python json.dumps as transformers' tojson calls it.
struct JsonOptions {
  bool ensure_ascii = false;
  bool sort_keys = false;
  bool has_indent = false;
  std::string indent;  // used when has_indent
  std::string item_separator = ", ";
  std::string key_separator = ": ";
};
std::string to_json(const Value& v, const JsonOptions& options, size_t max_bytes);
Value parse_json(std::string_view text);  // chat_template.cpp (uses nlohmann)

// format.cpp: printf-style `str % args` and Python str.format.
std::string percent_format(const std::string& fmt, const Value& args, size_t max_bytes);
std::string str_format(Renderer& r, const std::string& fmt, CallArgs& args);

// Python str helpers used by filters and methods (methods.cpp).
std::string py_strip(std::string_view s, const Value& chars, bool left, bool right);
Value strip_value(const Value& text, const Value& chars, bool left, bool right);  // text: a str
std::vector<std::string> py_split(std::string_view s, const Value& sep, int64_t maxsplit,
                                  bool from_right);
std::string py_title(std::string_view s);
std::string py_capitalize(std::string_view s);
std::string py_replace(Renderer& r, std::string_view s, std::string_view old, std::string_view with,
                       int64_t count);

}  // namespace strata::chat
