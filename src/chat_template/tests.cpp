// Jinja2's built-in tests (`x is defined`, `x is divisibleby 3`, ...).
#include <cmath>

#include "chat_template/builtins.h"
#include "chat_template/unicode.h"

namespace strata::chat {

namespace {

using Test = bool (*)(Renderer&, const Value&, CallArgs&);

const Value& arg(CallArgs& args, const char* test, const char* param) {
  static const Value kNone = Value::none();
  BoundArgs b(args, test, {param}, 1);
  return b.has(0) ? b.get(0) : kNone;
}

bool no_args(CallArgs& args, const char* test) {
  BoundArgs(args, test, {});
  return true;
}

bool compare_test(const Value& v, CallArgs& args, const char* name, bool (*pred)(int)) {
  const Value& other = arg(args, name, "other");
  if (v.is_undefined()) fail_undefined(v);
  if (other.is_undefined()) fail_undefined(other);
  return pred(compare(v, other));
}

// Jinja2 tests `value % 2 == 1` (odd) and `value % 2 == 0` (even) with Python's modulo.
bool parity_is(Renderer& r, const Value& v, int64_t remainder) {
  return equals(binary_op(r, BinaryOp::Mod, v, Value::integer(2)), Value::integer(remainder));
}

bool string_case(const Value& v, bool upper) {
  std::string s = to_str(v);
  bool cased = false;
  for (size_t i = 0; i < s.size();) {
    char32_t c = utf8::decode(s, i);
    if (upper ? utf8::is_lower(c) : utf8::is_upper(c)) return false;
    cased = cased || utf8::is_lower(c) || utf8::is_upper(c);
  }
  return cased;
}

bool same_as(const Value& a, const Value& b) {
  if (a.identity() || b.identity()) return a.identity() == b.identity();
  if (a.kind() != b.kind()) return false;
  return equals(a, b);
}

Test find_test(std::string_view name);

const std::pair<std::string_view, Test> kTests[] = {
    {"defined", [](Renderer&, const Value& v,
                   CallArgs& a) { return no_args(a, "defined") && !v.is_undefined(); }},
    {"undefined", [](Renderer&, const Value& v,
                     CallArgs& a) { return no_args(a, "undefined") && v.is_undefined(); }},
    {"none",
     [](Renderer&, const Value& v, CallArgs& a) { return no_args(a, "none") && v.is_none(); }},
    {"boolean",
     [](Renderer&, const Value& v, CallArgs& a) { return no_args(a, "boolean") && v.is_bool(); }},
    {"true", [](Renderer&, const Value& v,
                CallArgs& a) { return no_args(a, "true") && v.is_bool() && v.as_bool(); }},
    {"false", [](Renderer&, const Value& v,
                 CallArgs& a) { return no_args(a, "false") && v.is_bool() && !v.as_bool(); }},
    {"string",
     [](Renderer&, const Value& v, CallArgs& a) { return no_args(a, "string") && v.is_string(); }},
    {"number",
     [](Renderer&, const Value& v, CallArgs& a) { return no_args(a, "number") && v.is_number(); }},
    {"integer",
     [](Renderer&, const Value& v, CallArgs& a) { return no_args(a, "integer") && v.is_int(); }},
    {"float",
     [](Renderer&, const Value& v, CallArgs& a) { return no_args(a, "float") && v.is_float(); }},
    {"mapping",
     [](Renderer&, const Value& v, CallArgs& a) {
       return no_args(a, "mapping") && v.is_dict() && v.dict().flavor == DictFlavor::Plain;
     }},
    // Python's Undefined is iterable (and has a length), so these hold for it too.
    {"iterable",
     [](Renderer&, const Value& v, CallArgs& a) {
       return no_args(a, "iterable") && (v.is_string() || v.is_list() || v.is_undefined() ||
                                         (v.is_dict() && v.dict().flavor == DictFlavor::Plain));
     }},
    {"sequence",
     [](Renderer&, const Value& v, CallArgs& a) {
       return no_args(a, "sequence") && (v.is_string() || v.is_list() || v.is_undefined() ||
                                         (v.is_dict() && v.dict().flavor == DictFlavor::Plain));
     }},
    // Python's Undefined defines __call__ (calling it raises), so it counts as callable.
    {"callable",
     [](Renderer&, const Value& v, CallArgs& a) {
       return no_args(a, "callable") && (v.is_function() || v.is_undefined());
     }},
    {"escaped", [](Renderer&, const Value&, CallArgs& a) { return !no_args(a, "escaped"); }},
    {"odd", [](Renderer& r, const Value& v,
               CallArgs& a) { return no_args(a, "odd") && parity_is(r, v, 1); }},
    {"even", [](Renderer& r, const Value& v,
                CallArgs& a) { return no_args(a, "even") && parity_is(r, v, 0); }},
    {"lower", [](Renderer&, const Value& v,
                 CallArgs& a) { return no_args(a, "lower") && string_case(v, false); }},
    {"upper", [](Renderer&, const Value& v,
                 CallArgs& a) { return no_args(a, "upper") && string_case(v, true); }},
    {"divisibleby",
     [](Renderer& r, const Value& v, CallArgs& a) {
       const Value& n = arg(a, "divisibleby", "num");
       Value rem = binary_op(r, BinaryOp::Mod, v, n);
       return rem.as_double() == 0;
     }},
    {"eq", [](Renderer&, const Value& v, CallArgs& a) { return equals(v, arg(a, "eq", "other")); }},
    {"ne",
     [](Renderer&, const Value& v, CallArgs& a) { return !equals(v, arg(a, "ne", "other")); }},
    {"lt", [](Renderer&, const Value& v,
              CallArgs& a) { return compare_test(v, a, "lt", [](int c) { return c < 0; }); }},
    {"le", [](Renderer&, const Value& v,
              CallArgs& a) { return compare_test(v, a, "le", [](int c) { return c <= 0; }); }},
    {"gt", [](Renderer&, const Value& v,
              CallArgs& a) { return compare_test(v, a, "gt", [](int c) { return c > 0; }); }},
    {"ge", [](Renderer&, const Value& v,
              CallArgs& a) { return compare_test(v, a, "ge", [](int c) { return c >= 0; }); }},
    {"sameas",
     [](Renderer&, const Value& v, CallArgs& a) { return same_as(v, arg(a, "sameas", "other")); }},
    {"in", [](Renderer&, const Value& v, CallArgs& a) { return contains(arg(a, "in", "seq"), v); }},
    {"filter",
     [](Renderer&, const Value& v,
        CallArgs& a) { return no_args(a, "filter") && v.is_string() && has_filter(v.str()); }},
    {"test", [](Renderer&, const Value& v,
                CallArgs& a) { return no_args(a, "test") && v.is_string() && find_test(v.str()); }},
};

const std::pair<std::string_view, std::string_view> kAliases[] = {
    {"equalto", "eq"}, {"==", "eq"},          {"!=", "ne"}, {"lessthan", "lt"}, {"<", "lt"},
    {"<=", "le"},      {"greaterthan", "gt"}, {">", "gt"},  {">=", "ge"},
};

Test find_test(std::string_view name) {
  for (const auto& [alias, target] : kAliases) {
    if (alias == name) name = target;
  }
  for (const auto& [n, fn] : kTests) {
    if (n == name) return fn;
  }
  return nullptr;
}

}  // namespace

bool apply_test(Renderer& r, std::string_view name, const Value& operand, CallArgs& args) {
  Test test = find_test(name);
  if (!test) fail("no test named '" + std::string(name) + "'");
  return test(r, operand, args);
}

}  // namespace strata::chat
