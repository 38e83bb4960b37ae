// Expression half of the parser. Precedence, loosest first: conditional (`a if b else c`),
// or, and, not, comparisons (chained; in, not in), + and -, ~, * / // %, ** (left
// associative, as in Jinja2), unary - and +, then postfix (.attr, [item], call), filters
// and tests.
#include "chat_template/parser.h"
#include "core/error.h"

namespace strata::chat {

void Parser::attach(Expr& parent, const ExprPtr& child) {
  if (!child) return;
  if (child->depth + 1 > parent.depth) parent.depth = child->depth + 1;
  if (parent.depth > kMaxExprDepth) error(parent.pos, "expression too deeply nested");
}

ExprPtr Parser::make_binary(BinaryOp op, SourcePos pos, ExprPtr left, ExprPtr right) {
  auto node = std::make_unique<BinaryExpr>(pos, op);
  attach(*node, left);
  attach(*node, right);
  node->left = std::move(left);
  node->right = std::move(right);
  return node;
}

ExprPtr Parser::parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end) {
  SourcePos pos = cur().pos;
  auto is_end = [&] {
    const Token& t = cur();
    if (t.type == TokenType::VarEnd || t.type == TokenType::BlockEnd || t.type == TokenType::Eof)
      return true;
    if (t.type == TokenType::Operator && t.text == ")") return true;
    if (t.type == TokenType::Name) {
      for (std::string_view e : extra_end) {
        if (t.text == e) return true;
      }
    }
    return false;
  };
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    if (is_end()) break;
    items.push_back(parse_expression(with_condexpr));
    if (!at_op(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (items.empty()) unexpected("an expression");
    return std::move(items.front());
  }
  auto node = std::make_unique<ListExpr>(pos, true);
  for (auto& item : items) attach(*node, item);
  node->items = std::move(items);
  return node;
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  NestingGuard guard(*this);
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
  ExprPtr expr = parse_or();
  while (at_name("if")) {
    SourcePos pos = cur().pos;
    advance();
    auto node = std::make_unique<CondExpr>(pos);
    node->test = parse_or();
    if (skip_name("else")) {
      NestingGuard guard(*this);
      node->else_expr = parse_condexpr();
    }
    node->then_expr = std::move(expr);
    attach(*node, node->test);
    attach(*node, node->then_expr);
    attach(*node, node->else_expr);
    expr = std::move(node);
  }
  return expr;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (at_name("or")) {
    SourcePos pos = cur().pos;
    advance();
    left = make_binary(BinaryOp::Or, pos, std::move(left), parse_and());
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (at_name("and")) {
    SourcePos pos = cur().pos;
    advance();
    left = make_binary(BinaryOp::And, pos, std::move(left), parse_not());
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (!at_name("not")) return parse_compare();
  SourcePos pos = cur().pos;
  advance();
  NestingGuard guard(*this);
  auto node = std::make_unique<UnaryExpr>(pos, UnaryOp::Not);
  node->operand = parse_not();
  attach(*node, node->operand);
  return node;
}

ExprPtr Parser::parse_compare() {
  SourcePos pos = cur().pos;
  ExprPtr first = parse_math1();
  std::unique_ptr<CompareExpr> node;
  while (true) {
    CompareOp op;
    const Token& t = cur();
    if (t.type == TokenType::Operator && t.text == "==") {
      op = CompareOp::Eq;
    } else if (t.type == TokenType::Operator && t.text == "!=") {
      op = CompareOp::Ne;
    } else if (t.type == TokenType::Operator && t.text == "<") {
      op = CompareOp::Lt;
    } else if (t.type == TokenType::Operator && t.text == "<=") {
      op = CompareOp::Le;
    } else if (t.type == TokenType::Operator && t.text == ">") {
      op = CompareOp::Gt;
    } else if (t.type == TokenType::Operator && t.text == ">=") {
      op = CompareOp::Ge;
    } else if (at_name("in")) {
      op = CompareOp::In;
    } else if (at_name("not") && peek().type == TokenType::Name && peek().text == "in") {
      op = CompareOp::NotIn;
      advance();
    } else {
      break;
    }
    advance();
    if (!node) {
      node = std::make_unique<CompareExpr>(pos);
      attach(*node, first);
      node->first = std::move(first);
    }
    ExprPtr operand = parse_math1();
    attach(*node, operand);
    node->rest.emplace_back(op, std::move(operand));
  }
  if (node) return node;
  return first;
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (at_op("+") || at_op("-")) {
    BinaryOp op = at_op("+") ? BinaryOp::Add : BinaryOp::Sub;
    SourcePos pos = cur().pos;
    advance();
    left = make_binary(op, pos, std::move(left), parse_concat());
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  ExprPtr left = parse_math2();
  while (at_op("~")) {
    SourcePos pos = cur().pos;
    advance();
    left = make_binary(BinaryOp::Concat, pos, std::move(left), parse_math2());
  }
  return left;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
    BinaryOp op = at_op("*")    ? BinaryOp::Mul
                  : at_op("/")  ? BinaryOp::Div
                  : at_op("//") ? BinaryOp::FloorDiv
                                : BinaryOp::Mod;
    SourcePos pos = cur().pos;
    advance();
    left = make_binary(op, pos, std::move(left), parse_pow());
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (at_op("**")) {
    SourcePos pos = cur().pos;
    advance();
    left = make_binary(BinaryOp::Pow, pos, std::move(left), parse_unary(true));
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  ExprPtr node;
  if (at_op("-") || at_op("+")) {
    SourcePos pos = cur().pos;
    auto unary = std::make_unique<UnaryExpr>(pos, at_op("-") ? UnaryOp::Neg : UnaryOp::Pos);
    advance();
    NestingGuard guard(*this);
    unary->operand = parse_unary(false);
    attach(*unary, unary->operand);
    node = std::move(unary);
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  const Token& t = cur();
  SourcePos pos = t.pos;
  switch (t.type) {
    case TokenType::Name: {
      ExprPtr node;
      if (t.text == "true" || t.text == "True") {
        node = std::make_unique<LiteralExpr>(pos, Value::boolean(true));
      } else if (t.text == "false" || t.text == "False") {
        node = std::make_unique<LiteralExpr>(pos, Value::boolean(false));
      } else if (t.text == "none" || t.text == "None") {
        node = std::make_unique<LiteralExpr>(pos, Value::none());
      } else {
        if (!macros_.empty()) {
          if (t.text == "varargs") macros_.back()->uses_varargs = true;
          if (t.text == "kwargs") macros_.back()->uses_kwargs = true;
          if (t.text == "caller") macros_.back()->uses_caller = true;
        }
        node = std::make_unique<NameExpr>(pos, t.text);
      }
      advance();
      return node;
    }
    case TokenType::String: {
      std::string text;
      while (cur().type == TokenType::String) {  // adjacent literals concatenate
        text += cur().text;
        advance();
      }
      return std::make_unique<LiteralExpr>(pos, Value::string(std::move(text)));
    }
    case TokenType::Integer: {
      advance();
      return std::make_unique<LiteralExpr>(pos, Value::integer(tokens_[pos_ - 1].int_value));
    }
    case TokenType::Float: {
      advance();
      return std::make_unique<LiteralExpr>(pos, Value::number(tokens_[pos_ - 1].float_value));
    }
    case TokenType::Operator: {
      NestingGuard guard(*this);
      if (t.text == "(") {
        advance();
        ExprPtr inner;
        if (at_op(")")) {
          inner = std::make_unique<ListExpr>(pos, true);  // ()
        } else {
          inner = parse_tuple(true);
        }
        expect_op(")");
        return inner;
      }
      if (t.text == "[") {
        advance();
        auto node = std::make_unique<ListExpr>(pos, false);
        while (!at_op("]")) {
          if (!node->items.empty()) expect_op(",");
          if (at_op("]")) break;
          node->items.push_back(parse_expression());
          attach(*node, node->items.back());
        }
        expect_op("]");
        return node;
      }
      if (t.text == "{") {
        advance();
        auto node = std::make_unique<DictExpr>(pos);
        while (!at_op("}")) {
          if (!node->items.empty()) expect_op(",");
          if (at_op("}")) break;
          ExprPtr key = parse_expression();
          expect_op(":");
          ExprPtr value = parse_expression();
          attach(*node, key);
          attach(*node, value);
          node->items.emplace_back(std::move(key), std::move(value));
        }
        expect_op("}");
        return node;
      }
      break;
    }
    default:
      break;
  }
  unexpected("an expression");
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (at_op(".") || at_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (at_op("(")) {
      auto call = std::make_unique<CallExpr>(cur().pos);
      attach(*call, node);
      call->callee = std::move(node);
      call->args = parse_call_args(*call);
      node = std::move(call);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (at_op("|")) {
      advance();
      node = parse_filter(std::move(node));
    } else if (at_name("is")) {
      node = parse_test(std::move(node));
    } else if (at_op("(")) {
      auto call = std::make_unique<CallExpr>(cur().pos);
      attach(*call, node);
      call->callee = std::move(node);
      call->args = parse_call_args(*call);
      node = std::move(call);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  SourcePos pos = cur().pos;
  if (skip_op(".")) {
    if (cur().type == TokenType::Name) {
      auto attr = std::make_unique<AttrExpr>(pos);
      attr->name = cur().text;
      advance();
      attach(*attr, node);
      attr->object = std::move(node);
      return attr;
    }
    if (cur().type != TokenType::Integer) unexpected("an attribute name or number");
    auto item = std::make_unique<ItemExpr>(pos);
    item->index = std::make_unique<LiteralExpr>(cur().pos, Value::integer(cur().int_value));
    advance();
    attach(*item, node);
    item->object = std::move(node);
    return item;
  }
  expect_op("[");
  NestingGuard guard(*this);
  std::vector<ExprPtr> args;
  while (!at_op("]")) {
    if (!args.empty()) expect_op(",");
    args.push_back(parse_subscribed());
  }
  expect_op("]");
  if (args.empty()) error(pos, "expected a subscript inside []");
  ExprPtr index;
  if (args.size() == 1) {
    index = std::move(args.front());
  } else {
    bool has_slice = false;
    auto tuple = std::make_unique<ListExpr>(pos, true);
    for (auto& a : args) {
      has_slice = has_slice || a->kind == ExprKind::Slice;
      attach(*tuple, a);
    }
    tuple->items = std::move(args);
    index = std::move(tuple);
    // No str, list or dict takes a tuple of slices as index: in Jinja2 that is undefined.
    if (has_slice)
      index = std::make_unique<LiteralExpr>(pos, Value::undefined("invalid subscript"));
  }
  if (index->kind == ExprKind::Slice) {
    auto& slice = static_cast<SliceExpr&>(*index);
    attach(slice, node);
    slice.object = std::move(node);
    return index;
  }
  auto item = std::make_unique<ItemExpr>(pos);
  attach(*item, node);
  attach(*item, index);
  item->object = std::move(node);
  item->index = std::move(index);
  return item;
}

// One subscript: an expression or a slice `start:stop:step` with optional parts. The
// slice's object is filled in by parse_subscript.
ExprPtr Parser::parse_subscribed() {
  SourcePos pos = cur().pos;
  ExprPtr start;
  if (!at_op(":")) {
    start = parse_expression();
    if (!at_op(":")) return start;
  }
  advance();  // ':'
  auto slice = std::make_unique<SliceExpr>(pos);
  slice->start = std::move(start);
  if (!at_op(":") && !at_op("]") && !at_op(",")) slice->stop = parse_expression();
  if (skip_op(":")) {
    if (!at_op("]") && !at_op(",")) slice->step = parse_expression();
  }
  attach(*slice, slice->start);
  attach(*slice, slice->stop);
  attach(*slice, slice->step);
  return slice;
}

std::string Parser::parse_dotted_name() {
  std::string name = expect_name();
  while (at_op(".")) {
    advance();
    name += "." + expect_name();
  }
  return name;
}

std::unique_ptr<FilterExpr> Parser::parse_filter(ExprPtr operand) {
  auto node = std::make_unique<FilterExpr>(cur().pos);
  node->name = parse_dotted_name();
  if (at_op("(")) node->args = parse_call_args(*node);
  attach(*node, operand);
  node->operand = std::move(operand);
  return node;
}

ExprPtr Parser::parse_test(ExprPtr operand) {
  auto node = std::make_unique<TestExpr>(cur().pos);
  advance();  // 'is'
  node->negated = skip_name("not");
  node->name = parse_dotted_name();
  const Token& t = cur();
  if (at_op("(")) {
    node->args = parse_call_args(*node);
  } else if ((t.type == TokenType::Name || t.type == TokenType::String ||
              t.type == TokenType::Integer || t.type == TokenType::Float || at_op("[") ||
              at_op("{")) &&
             !(at_name("else") || at_name("or") || at_name("and") || at_name("if") ||
               at_name("in") || at_name("not"))) {
    if (at_name("is")) error(t.pos, "tests cannot be chained with 'is'");
    ExprPtr arg = parse_postfix(parse_primary());
    attach(*node, arg);
    node->args.positional.push_back(std::move(arg));
  }
  attach(*node, operand);
  node->operand = std::move(operand);
  return node;
}

Arguments Parser::parse_call_args(Expr& owner) {
  NestingGuard guard(*this);
  SourcePos pos = cur().pos;
  expect_op("(");
  Arguments args;
  bool need_comma = false;
  while (!at_op(")")) {
    if (need_comma) {
      expect_op(",");
      if (at_op(")")) break;
    }
    if (at_op("*")) {
      if (args.star_args || args.star_kwargs)
        error(pos, "invalid syntax for function call expression");
      advance();
      args.star_args = parse_expression();
      attach(owner, args.star_args);
    } else if (at_op("**")) {
      if (args.star_kwargs) error(pos, "invalid syntax for function call expression");
      advance();
      args.star_kwargs = parse_expression();
      attach(owner, args.star_kwargs);
    } else if (cur().type == TokenType::Name && peek().type == TokenType::Operator &&
               peek().text == "=") {
      if (args.star_kwargs) error(pos, "invalid syntax for function call expression");
      std::string key = cur().text;
      advance();
      advance();
      ExprPtr value = parse_expression();
      attach(owner, value);
      args.keyword.emplace_back(std::move(key), std::move(value));
    } else {
      if (args.star_args || args.star_kwargs || !args.keyword.empty()) {
        error(cur().pos, "positional argument follows keyword argument");
      }
      args.positional.push_back(parse_expression());
      attach(owner, args.positional.back());
    }
    need_comma = true;
  }
  expect_op(")");
  return args;
}

}  // namespace strata::chat
