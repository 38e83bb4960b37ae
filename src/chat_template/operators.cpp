// Python arithmetic, concatenation, containment, iteration and slicing on template values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "chat_template/budget.h"
#include "chat_template/builtins.h"
#include "chat_template/unicode.h"

namespace strata::chat {

namespace {

const char* op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "+";
    case BinaryOp::Sub:
      return "-";
    case BinaryOp::Mul:
      return "*";
    case BinaryOp::Div:
      return "/";
    case BinaryOp::FloorDiv:
      return "//";
    case BinaryOp::Mod:
      return "%";
    case BinaryOp::Pow:
      return "**";
    case BinaryOp::Concat:
      return "~";
    case BinaryOp::And:
      return "and";
    case BinaryOp::Or:
      return "or";
  }
  return "?";
}

[[noreturn]] void unsupported(BinaryOp op, const Value& a, const Value& b) {
  fail(std::string("unsupported operand type(s) for ") + op_symbol(op) + ": '" + type_name(a) +
       "' and '" + type_name(b) + "'");
}

void check_overflow(bool overflow) {
  if (overflow) fail("integer overflow");
}

Value int_pow(int64_t base, int64_t exp) {
  if (exp < 0) return Value::number(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) check_overflow(__builtin_mul_overflow(result, base, &result));
    exp >>= 1;
    if (exp > 0) check_overflow(__builtin_mul_overflow(base, base, &base));
  }
  return Value::integer(result);
}

Value repeat(Renderer& r, const Value& seq, int64_t count) {
  if (count < 0) count = 0;
  if (seq.is_string()) {
    const std::string& s = seq.str();
    if (!s.empty() && static_cast<uint64_t>(count) > r.limits().max_output_bytes / s.size()) {
      r.check_text_size(r.limits().max_output_bytes + 1);
    }
    // By doubling: appending `s` count times costs a few ns per byte when s is short.
    const size_t total = s.size() * static_cast<size_t>(count);
    std::string out;
    out.reserve(total);
    if (total > 0) out = s;
    while (out.size() < total) out.append(out, 0, std::min(out.size(), total - out.size()));
    return Value::string(std::move(out));
  }
  const auto& items = seq.list().items;
  if (!items.empty() &&
      count > r.limits().max_loop_iterations / static_cast<int64_t>(items.size())) {
    fail("list repetition too large: more items than the loop iteration limit");
  }
  std::vector<Value> out;
  out.reserve(items.size() * static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::make_list(std::move(out), seq.list().is_tuple);
}

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
  if (a.is_integral() && b.is_integral()) {
    int64_t x = a.as_int(), y = b.as_int(), r = 0;
    switch (op) {
      case BinaryOp::Add:
        check_overflow(__builtin_add_overflow(x, y, &r));
        return Value::integer(r);
      case BinaryOp::Sub:
        check_overflow(__builtin_sub_overflow(x, y, &r));
        return Value::integer(r);
      case BinaryOp::Mul:
        check_overflow(__builtin_mul_overflow(x, y, &r));
        return Value::integer(r);
      case BinaryOp::Div:
        if (y == 0) fail("division by zero");
        return Value::number(static_cast<double>(x) / static_cast<double>(y));
      case BinaryOp::FloorDiv:
      case BinaryOp::Mod: {
        if (y == 0) fail("integer division or modulo by zero");
        if (x == std::numeric_limits<int64_t>::min() && y == -1) {
          if (op == BinaryOp::Mod) return Value::integer(0);
          fail("integer overflow");
        }
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {  // Python rounds toward negative infinity
          --q;
          m += y;
        }
        return Value::integer(op == BinaryOp::FloorDiv ? q : m);
      }
      case BinaryOp::Pow:
        return int_pow(x, y);
      default:
        break;
    }
  }
  double x = a.as_double(), y = b.as_double();
  switch (op) {
    case BinaryOp::Add:
      return Value::number(x + y);
    case BinaryOp::Sub:
      return Value::number(x - y);
    case BinaryOp::Mul:
      return Value::number(x * y);
    case BinaryOp::Div:
      if (y == 0) fail("float division by zero");
      return Value::number(x / y);
    case BinaryOp::FloorDiv:
      if (y == 0) fail("float floor division by zero");
      return Value::number(std::floor(x / y));
    case BinaryOp::Mod: {
      if (y == 0) fail("float modulo");
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      if (m == 0) m = std::copysign(0.0, y);  // Python: the remainder has the divisor's sign
      return Value::number(m);
    }
    case BinaryOp::Pow:
      if (x == 0 && y < 0) fail("0.0 cannot be raised to a negative power");
      return Value::number(std::pow(x, y));
    default:
      break;
  }
  unsupported(op, a, b);
}

}  // namespace

Value binary_op(Renderer& r, BinaryOp op, Value a, Value b) {
  size_t max_text = r.limits().max_output_bytes;
  if (op == BinaryOp::Concat) {
    std::string left = a.is_string() ? a.take_str() : to_str(a, max_text);
    const std::string right_text = b.is_string() ? std::string() : to_str(b, max_text);
    const std::string& right = b.is_string() ? b.str() : right_text;
    r.check_text_size(left.size() + right.size());
    left += right;
    return Value::string(std::move(left));
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
  switch (op) {
    case BinaryOp::Add:
      if (a.is_string() && b.is_string()) {
        r.check_text_size(a.str().size() + b.str().size());
        std::string left = a.take_str();
        left += b.str();
        return Value::string(std::move(left));
      }
      if (a.is_list() && b.is_list() && a.list().is_tuple == b.list().is_tuple) {
        std::vector<Value> items = a.list().items;
        items.insert(items.end(), b.list().items.begin(), b.list().items.end());
        return Value::make_list(std::move(items), a.list().is_tuple);
      }
      if (a.is_string() || b.is_string()) {
        fail("can only concatenate str (not \"" + type_name(a.is_string() ? b : a) + "\") to str");
      }
      break;
    case BinaryOp::Mul:
      if ((a.is_string() || a.is_list()) && b.is_integral()) return repeat(r, a, b.as_int());
      if (a.is_integral() && (b.is_string() || b.is_list())) return repeat(r, b, a.as_int());
      break;
    case BinaryOp::Mod:
      if (a.is_string()) return Value::string(percent_format(a.str(), b, max_text));
      break;
    default:
      break;
  }
  unsupported(op, a, b);
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::String:
    case Kind::List:
      // `in` scans; a loop of `in` tests on a big string or list must cost what it does.
      charge_work(container.is_string() ? container.str().size() : container.list().items.size());
      break;
    default:
      break;
  }
  switch (container.kind()) {
    case Kind::Undefined:
      return false;
    case Kind::String:
      if (!item.is_string())
        fail("'in <string>' requires string as left operand, not " + type_name(item));
      return container.str().find(item.str()) != std::string::npos;
    case Kind::List:
      for (const Value& v : container.list().items) {
        if (equals(v, item)) return true;
      }
      return false;
    case Kind::Dict:
      return container.dict().find(item) != nullptr;
    default:
      fail("argument of type '" + type_name(container) + "' is not iterable");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
      return {};
    case Kind::List:
      charge_work(v.list().items.size() * kItemUnits);  // a copy, made by every list filter
      return v.list().items;
    case Kind::Dict: {
      charge_work(v.dict().size() * kItemUnits);
      std::vector<Value> keys;
      keys.reserve(v.dict().size());
      for (const auto& [k, val] : v.dict().entries) keys.push_back(k);
      return keys;
    }
    case Kind::String: {
      std::vector<Value> chars;
      const std::string& s = v.str();
      for (size_t i = 0; i < s.size();) {
        size_t start = i;
        utf8::decode(s, i);
        chars.push_back(Value::string(s.substr(start, i - start)));
      }
      return chars;
    }
    default:
      fail("'" + type_name(v) + "' object is not iterable");
  }
}

Value slice_value(const Value& object, const Value& start, const Value& stop, const Value& step) {
  auto index_of = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none()) return std::nullopt;
    if (!v.is_integral()) fail(std::string("slice ") + what + " must be an integer or None");
    return v.as_int();
  };
  int64_t st = index_of(step, "step").value_or(1);
  if (st == 0) fail("slice step cannot be zero");
  if (st == std::numeric_limits<int64_t>::min()) st = -std::numeric_limits<int64_t>::max();
  std::optional<int64_t> b = index_of(start, "start");
  std::optional<int64_t> e = index_of(stop, "stop");

  std::u32string chars;
  int64_t n = 0;
  if (object.is_string()) {
    chars = utf8::to_u32(object.str());
    n = static_cast<int64_t>(chars.size());
  } else if (object.is_list()) {
    n = static_cast<int64_t>(object.list().items.size());
  } else {
    fail("'" + type_name(object) + "' object is not subscriptable");
  }
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t i = *v;
    if (i < 0) {
      i = i < -n ? (st < 0 ? -1 : 0) : i + n;
    } else if (i >= n) {
      i = st < 0 ? n - 1 : n;
    }
    return i;
  };
  int64_t first = adjust(b, st < 0 ? n - 1 : 0);
  int64_t last = adjust(e, st < 0 ? -1 : n);
  std::vector<int64_t> picks;
  if (st > 0) {
    for (int64_t i = first; i < last; i += st) {
      picks.push_back(i);
      if (i > std::numeric_limits<int64_t>::max() - st) break;
    }
  } else {
    for (int64_t i = first; i > last; i += st) {
      picks.push_back(i);
      if (i < std::numeric_limits<int64_t>::min() - st) break;
    }
  }
  if (object.is_string()) {
    std::u32string out;
    out.reserve(picks.size());
    for (int64_t i : picks) out.push_back(chars[static_cast<size_t>(i)]);
    return Value::string(utf8::from_u32(out));
  }
  std::vector<Value> out;
  out.reserve(picks.size());
  for (int64_t i : picks) out.push_back(object.list().items[static_cast<size_t>(i)]);
  return Value::make_list(std::move(out), object.list().is_tuple);
}

}  // namespace strata::chat
