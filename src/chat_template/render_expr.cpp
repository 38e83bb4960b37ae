// Expression evaluation, variable lookup, attribute and item access, and calls.
#include <limits>

#include "chat_template/builtins.h"
#include "chat_template/renderer.h"
#include "chat_template/unicode.h"
#include "core/error.h"

namespace strata::chat {

namespace {

// Names the Jinja2 sandbox refuses to expose: Python internals that lead from a value to
// its class, module globals or interpreter frames.
bool is_unsafe_attribute(std::string_view name) {
  if (name.size() >= 2 && name[0] == '_' && name[1] == '_') return true;
  static constexpr std::string_view kUnsafe[] = {
      "mro",        "func_globals", "func_code", "func_closure", "gi_frame",  "gi_code",
      "cr_frame",   "cr_code",      "ag_frame",  "ag_code",      "f_globals", "f_locals",
      "f_builtins", "f_code",       "tb_frame",  "im_func",      "im_self",
  };
  for (std::string_view u : kUnsafe) {
    if (name == u) return true;
  }
  return false;
}

[[noreturn]] void fail_unsafe(const Value& object, std::string_view name) {
  fail("access to attribute '" + std::string(name) + "' of '" + type_name(object) +
       "' object is unsafe");
}

// Bytes a string method or filter may scan: charged up front as work, so that repeated
// replace/split/find/upper/length/... on a big string cost what they do. The few that look
// at a bounded part (or nothing) are exempt, since templates call them in loops on text
// that grows (an output being accumulated). List and dict builtins pay through the items
// they copy or create instead (iterate, make_list).
uint64_t string_scan(const Value& v, std::string_view builtin) {
  if (!v.is_string()) return 0;
  if (builtin == "startswith" || builtin == "endswith" || builtin == "default" || builtin == "d" ||
      builtin == "string" || builtin == "safe") {
    return 0;
  }
  return v.str().size();
}

Value no_attribute(const Value& object, std::string_view name) {
  std::string what = object.is_none() ? "'None'" : "'" + type_name(object) + " object'";
  return Value::undefined(what + " has no attribute '" + std::string(name) + "'");
}

}  // namespace

Value Renderer::lookup(const std::string& name, const ScopePtr& scope) {
  if (const Value* v = scope->find(name)) return *v;
  Value global = lookup_global(name);
  if (!global.is_undefined()) return global;
  return Value::undefined("'" + name + "' is undefined");
}

Value Renderer::get_attr(const Value& object, std::string_view name) {
  if (object.is_undefined()) fail_undefined(object);
  if (name.size() >= 2 && name[0] == '_' && name[1] == '_') fail_unsafe(object, name);
  if (object.is_dict()) {
    if (object.dict().flavor == DictFlavor::Plain) {
      Value method = get_method(object, name);
      if (!method.is_undefined()) return method;
    }
    if (const Value* v = object.dict().find(name)) return *v;
  } else if (object.is_string() || object.is_list()) {
    Value method = get_method(object, name);
    if (!method.is_undefined()) {
      budget_.work(string_scan(object, name));
      return method;
    }
  }
  if (is_unsafe_attribute(name)) fail_unsafe(object, name);
  return no_attribute(object, name);
}

Value Renderer::get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) fail_undefined(object);
  switch (object.kind()) {
    case Kind::Dict:
      if (!(key.is_list() && !key.list().is_tuple) && !key.is_dict()) {
        if (const Value* v = object.dict().find(key)) return *v;
      }
      break;
    case Kind::List:
    case Kind::String:
      if (key.is_integral()) {
        int64_t i = key.as_int();
        if (object.is_list()) {
          const auto& items = object.list().items;
          int64_t n = static_cast<int64_t>(items.size());
          if (i < 0) i += n;
          if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
        } else {
          budget_.work(object.str().size() * kDecodeUnits);  // decodes the whole string
          std::u32string chars = utf8::to_u32(object.str());
          int64_t n = static_cast<int64_t>(chars.size());
          if (i < 0) i += n;
          if (i >= 0 && i < n)
            return Value::string(utf8::from_u32(chars.substr(static_cast<size_t>(i), 1)));
        }
        return Value::undefined("'" + type_name(object) + " object' has no element " +
                                std::to_string(key.as_int()));
      }
      break;
    default:
      break;
  }
  if (key.is_string()) return get_attr(object, key.str());
  return Value::undefined("'" + type_name(object) + " object' has no element " + to_repr(key, 256));
}

Value Renderer::call(const Value& callee, CallArgs& args) {
  budget_.work(kStepUnits);
  if (callee.is_function()) {
    Value keep_alive = callee;  // the call may drop the container that holds `callee`
    return keep_alive.func().call(*this, args);
  }
  if (callee.is_undefined()) fail_undefined(callee);
  fail("'" + type_name(callee) + "' object is not callable");
}

CallArgs Renderer::eval_args(const Arguments& args, const ScopePtr& scope) {
  CallArgs out;
  out.positional.reserve(args.positional.size());
  for (const ExprPtr& e : args.positional) out.positional.push_back(eval(*e, scope));
  if (args.star_args) {
    for (Value& v : iterate(eval(*args.star_args, scope))) out.positional.push_back(std::move(v));
  }
  for (const auto& [key, e] : args.keyword) out.keyword.emplace_back(key, eval(*e, scope));
  if (args.star_kwargs) {
    Value kw = eval(*args.star_kwargs, scope);
    if (!kw.is_dict()) fail("argument after ** must be a mapping, not " + type_name(kw));
    for (const auto& [k, v] : kw.dict().entries) {
      if (!k.is_string()) fail("keywords must be strings");
      out.keyword.emplace_back(k.str(), v);
    }
  }
  return out;
}

Value Renderer::apply_filter(const FilterExpr& filter, Value operand, const ScopePtr& scope) {
  CallArgs args = eval_args(filter.args, scope);
  budget_.work(kStepUnits + string_scan(operand, filter.name));
  try {
    return chat::apply_filter(*this, filter.name, std::move(operand), args);
  } catch (const TemplateRuntimeError& e) {
    error_at(filter.pos, e.what());
  }
}

Value Renderer::eval(const Expr& expr, const ScopePtr& scope) {
  check_stack(expr.pos);
  try {
    budget_.work(kStepUnits);
    return eval_inner(expr, scope);
  } catch (const TemplateRuntimeError& e) {
    error_at(expr.pos, e.what());
  }
}

Value Renderer::eval_inner(const Expr& expr, const ScopePtr& scope) {
  switch (expr.kind) {
    case ExprKind::Literal:
      return static_cast<const LiteralExpr&>(expr).value;
    case ExprKind::Name:
      return lookup(static_cast<const NameExpr&>(expr).name, scope);
    case ExprKind::Attr: {
      const auto& e = static_cast<const AttrExpr&>(expr);
      return get_attr(eval(*e.object, scope), e.name);
    }
    case ExprKind::Item: {
      const auto& e = static_cast<const ItemExpr&>(expr);
      Value object = eval(*e.object, scope);
      return get_item(object, eval(*e.index, scope));
    }
    case ExprKind::Slice:
      return eval_slice(static_cast<const SliceExpr&>(expr), scope);
    case ExprKind::Call: {
      const auto& e = static_cast<const CallExpr&>(expr);
      Value callee = eval(*e.callee, scope);
      CallArgs args = eval_args(e.args, scope);
      return call(callee, args);
    }
    case ExprKind::Filter: {
      const auto& e = static_cast<const FilterExpr&>(expr);
      return apply_filter(e, eval(*e.operand, scope), scope);
    }
    case ExprKind::Test: {
      const auto& e = static_cast<const TestExpr&>(expr);
      Value operand = eval(*e.operand, scope);
      CallArgs args = eval_args(e.args, scope);
      return Value::boolean(apply_test(*this, e.name, operand, args) != e.negated);
    }
    case ExprKind::Unary: {
      const auto& e = static_cast<const UnaryExpr&>(expr);
      Value v = eval(*e.operand, scope);
      if (e.op == UnaryOp::Not) return Value::boolean(!truthy(v));
      if (v.is_undefined()) fail_undefined(v);
      if (v.is_float()) return Value::number(e.op == UnaryOp::Neg ? -v.as_double() : v.as_double());
      if (v.is_integral()) {
        int64_t i = v.as_int();
        if (e.op == UnaryOp::Pos) return Value::integer(i);
        if (i == std::numeric_limits<int64_t>::min()) fail("integer overflow");
        return Value::integer(-i);
      }
      fail(std::string("bad operand type for unary ") + (e.op == UnaryOp::Neg ? "-" : "+") + ": '" +
           type_name(v) + "'");
    }
    case ExprKind::Binary: {
      const auto& e = static_cast<const BinaryExpr&>(expr);
      Value left = eval(*e.left, scope);
      if (e.op == BinaryOp::And) return truthy(left) ? eval(*e.right, scope) : left;
      if (e.op == BinaryOp::Or) return truthy(left) ? left : eval(*e.right, scope);
      return binary_op(*this, e.op, std::move(left), eval(*e.right, scope));
    }
    case ExprKind::Compare:
      return eval_compare(static_cast<const CompareExpr&>(expr), scope);
    case ExprKind::Cond: {
      const auto& e = static_cast<const CondExpr&>(expr);
      if (truthy(eval(*e.test, scope))) return eval(*e.then_expr, scope);
      if (e.else_expr) return eval(*e.else_expr, scope);
      return Value::undefined(
          "the inline if-expression evaluated to false and has no else section");
    }
    case ExprKind::List: {
      const auto& e = static_cast<const ListExpr&>(expr);
      std::vector<Value> items;
      items.reserve(e.items.size());
      for (const ExprPtr& item : e.items) items.push_back(eval(*item, scope));
      return Value::make_list(std::move(items), e.is_tuple);
    }
    case ExprKind::Dict: {
      const auto& e = static_cast<const DictExpr&>(expr);
      Value d = Value::make_dict();
      for (const auto& [k, v] : e.items) {
        Value key = eval(*k, scope);
        d.dict().set(std::move(key), eval(*v, scope));
      }
      return d;
    }
  }
  fail("unknown expression");
}

Value Renderer::eval_compare(const CompareExpr& expr, const ScopePtr& scope) {
  Value left = eval(*expr.first, scope);
  for (const auto& [op, operand] : expr.rest) {
    Value right = eval(*operand, scope);
    bool result = false;
    switch (op) {
      case CompareOp::Eq:
        result = equals(left, right);
        break;
      case CompareOp::Ne:
        result = !equals(left, right);
        break;
      case CompareOp::In:
        result = contains(right, left);
        break;
      case CompareOp::NotIn:
        result = !contains(right, left);
        break;
      default: {
        if (left.is_undefined()) fail_undefined(left);
        if (right.is_undefined()) fail_undefined(right);
        int c = compare(left, right);
        result = op == CompareOp::Lt   ? c < 0
                 : op == CompareOp::Le ? c <= 0
                 : op == CompareOp::Gt ? c > 0
                                       : c >= 0;
      }
    }
    if (!result) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Renderer::eval_slice(const SliceExpr& expr, const ScopePtr& scope) {
  Value object = eval(*expr.object, scope);
  Value start = expr.start ? eval(*expr.start, scope) : Value::none();
  Value stop = expr.stop ? eval(*expr.stop, scope) : Value::none();
  Value step = expr.step ? eval(*expr.step, scope) : Value::none();
  if (object.is_undefined()) fail_undefined(object);
  budget_.work(object.is_string() ? object.str().size() * kDecodeUnits
               : object.is_list() ? object.list().items.size() * kItemUnits
                                  : 0);
  return slice_value(object, start, stop, step);
}

}  // namespace strata::chat
