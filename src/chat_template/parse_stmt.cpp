// Statement half of the parser: template text, `{{ }}` output and `{% %}` tags.
#include "chat_template/parser.h"
#include "core/error.h"

namespace strata::chat {

Program parse_template(std::string_view source, const std::string& template_name) {
  Parser parser(tokenize(source, template_name), template_name);
  return parser.parse_program();
}

Parser::Parser(std::vector<Token> tokens, const std::string& template_name)
    : tokens_(std::move(tokens)), name_(template_name) {}

// ---- token helpers --------------------------------------------------------------------------

const Token& Parser::peek(size_t ahead) const {
  size_t i = pos_ + ahead;
  return i < tokens_.size() ? tokens_[i] : tokens_.back();
}

bool Parser::skip_op(std::string_view op) {
  if (!at_op(op)) return false;
  advance();
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!at_name(name)) return false;
  advance();
  return true;
}

void Parser::expect_op(std::string_view op) {
  if (!skip_op(op)) unexpected("'" + std::string(op) + "'");
}

std::string Parser::expect_name() {
  if (cur().type != TokenType::Name) unexpected("a name");
  std::string name = cur().text;
  advance();
  return name;
}

void Parser::expect_block_end() {
  if (cur().type != TokenType::BlockEnd) unexpected("end of statement '%}'");
  advance();
}

void Parser::error(SourcePos pos, const std::string& message) const {
  throw strata::Error(format_error(name_, pos, message));
}

std::string Parser::describe(const Token& t) const {
  switch (t.type) {
    case TokenType::Data:
      return "template text";
    case TokenType::VarBegin:
      return "'{{'";
    case TokenType::VarEnd:
      return "end of print statement '}}'";
    case TokenType::BlockBegin:
      return "'{%'";
    case TokenType::BlockEnd:
      return "end of statement '%}'";
    case TokenType::Name:
      return "'" + t.text + "'";
    case TokenType::String:
      return "string literal";
    case TokenType::Integer:
    case TokenType::Float:
      return "number '" + t.text + "'";
    case TokenType::Operator:
      return "'" + t.text + "'";
    case TokenType::Eof:
      return "end of template";
  }
  return "token";
}

void Parser::unexpected(const std::string& expected) const {
  error(cur().pos, "expected " + expected + ", got " + describe(cur()));
}

// ---- statements -----------------------------------------------------------------------------

Program Parser::parse_program() {
  Program program;
  program.body = parse_body({}, "", SourcePos{});
  return program;
}

Body Parser::parse_body(std::initializer_list<std::string_view> end_tags,
                        std::string_view opened_by, SourcePos opened_at) {
  Body body;
  while (true) {
    const Token& t = cur();
    switch (t.type) {
      case TokenType::Data:
        body.push_back(std::make_unique<TextStmt>(t.pos, t.text));
        advance();
        break;
      case TokenType::VarBegin: {
        auto print = std::make_unique<PrintStmt>(t.pos);
        advance();
        print->expr = parse_tuple(true);
        if (cur().type != TokenType::VarEnd) unexpected("end of print statement '}}'");
        advance();
        body.push_back(std::move(print));
        break;
      }
      case TokenType::BlockBegin: {
        const Token& tag = peek();
        if (tag.type == TokenType::Name) {
          for (std::string_view end : end_tags) {
            if (tag.text == end) {
              advance();
              return body;
            }
          }
        }
        body.push_back(parse_statement());
        break;
      }
      case TokenType::Eof: {
        if (end_tags.size() == 0) return body;
        std::string expected;
        for (std::string_view end : end_tags)
          expected += (expected.empty() ? "'" : " or '") + std::string(end) + "'";
        error(t.pos, "unexpected end of template: expected " + expected + " to close the '" +
                         std::string(opened_by) + "' block opened at line " +
                         std::to_string(opened_at.line));
      }
      default:
        unexpected("template text or a tag");
    }
  }
}

StmtPtr Parser::parse_statement() {
  NestingGuard guard(*this);
  advance();  // '{%'
  SourcePos pos = cur().pos;
  if (cur().type != TokenType::Name) unexpected("a statement name");
  std::string tag = cur().text;
  advance();
  if (tag == "for") return parse_for(pos);
  if (tag == "if") return parse_if(pos);
  if (tag == "set") return parse_set(pos);
  if (tag == "macro") return parse_macro(pos);
  if (tag == "call") return parse_call_block(pos);
  if (tag == "filter") return parse_filter_block(pos);
  if (tag == "with") return parse_with(pos);
  if (tag == "generation") return parse_scope_block(pos, "endgeneration");
  if (tag == "block") {
    expect_name();
    while (at_name("scoped") || at_name("required")) advance();
    return parse_scope_block(pos, "endblock");
  }
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) error(pos, "'" + tag + "' outside of a loop");
    expect_block_end();
    return std::make_unique<Stmt>(tag == "break" ? StmtKind::Break : StmtKind::Continue, pos);
  }
  if (tag == "do") {
    auto stmt = std::make_unique<DoStmt>(pos);
    stmt->expr = parse_tuple(true);
    expect_block_end();
    return stmt;
  }
  if (tag == "include" || tag == "import" || tag == "from" || tag == "extends") {
    error(pos, "'" + tag + "' is not supported: a chat template cannot load other templates");
  }
  if (tag.rfind("end", 0) == 0 || tag == "else" || tag == "elif") {
    error(pos, "unexpected '" + tag + "' without a matching opening tag");
  }
  error(pos, "unknown tag '" + tag + "'");
}

void Parser::end_block_tag(std::string_view tag) {
  if (!at_name(tag)) unexpected("'" + std::string(tag) + "'");
  advance();
  if (cur().type == TokenType::Name) advance();  // `{% endmacro name %}`, `{% endblock name %}`
  expect_block_end();
}

StmtPtr Parser::parse_for(SourcePos pos) {
  auto stmt = std::make_unique<ForStmt>(pos);
  stmt->target = parse_target(false);
  if (!skip_name("in")) unexpected("'in'");
  stmt->iter = parse_tuple(false, {"recursive"});
  if (skip_name("if")) stmt->filter = parse_expression();
  if (at_name("recursive")) error(cur().pos, "recursive for loops are not supported");
  expect_block_end();
  ++loop_depth_;
  stmt->body = parse_body({"endfor", "else"}, "for", pos);
  --loop_depth_;
  if (skip_name("else")) {
    expect_block_end();
    stmt->else_body = parse_body({"endfor"}, "for", pos);
  }
  end_block_tag("endfor");
  return stmt;
}

StmtPtr Parser::parse_if(SourcePos pos) {
  auto stmt = std::make_unique<IfStmt>(pos);
  ExprPtr cond = parse_tuple(false);
  expect_block_end();
  while (true) {
    Body body = parse_body({"elif", "else", "endif"}, "if", pos);
    stmt->branches.emplace_back(std::move(cond), std::move(body));
    if (skip_name("elif")) {
      cond = parse_tuple(false);
      expect_block_end();
      continue;
    }
    if (skip_name("else")) {
      expect_block_end();
      stmt->else_body = parse_body({"endif"}, "if", pos);
    }
    break;
  }
  end_block_tag("endif");
  return stmt;
}

StmtPtr Parser::parse_set(SourcePos pos) {
  Target target = parse_target(true);
  if (skip_op("=")) {
    auto stmt = std::make_unique<SetStmt>(pos);
    stmt->target = std::move(target);
    stmt->value = parse_tuple(true);
    expect_block_end();
    return stmt;
  }
  if (target.is_tuple) unexpected("'='");
  auto stmt = std::make_unique<SetBlockStmt>(pos);
  stmt->target = std::move(target);
  while (skip_op("|")) stmt->filters.push_back(parse_filter(nullptr));
  expect_block_end();
  stmt->body = parse_body({"endset"}, "set", pos);
  end_block_tag("endset");
  return stmt;
}

Target Parser::parse_target(bool allow_namespace) {
  if (allow_namespace && cur().type == TokenType::Name && peek().type == TokenType::Operator &&
      peek().text == ".") {
    Target t;
    t.name = expect_name();
    advance();  // '.'
    t.attr = expect_name();
    return t;
  }
  Target first = parse_target_item();
  if (!at_op(",")) return first;
  Target tuple;
  tuple.is_tuple = true;
  tuple.items.push_back(std::move(first));
  while (skip_op(",")) {
    if (at_name("in") || at_op("=") || cur().type == TokenType::BlockEnd) break;
    tuple.items.push_back(parse_target_item());
  }
  return tuple;
}

Target Parser::parse_target_item() {
  if (skip_op("(")) {
    NestingGuard guard(*this);
    Target tuple;
    tuple.is_tuple = true;
    while (!at_op(")")) {
      if (!tuple.items.empty()) expect_op(",");
      if (at_op(")")) break;
      tuple.items.push_back(parse_target_item());
    }
    expect_op(")");
    return tuple;
  }
  Target t;
  SourcePos pos = cur().pos;
  t.name = expect_name();
  if (t.name == "true" || t.name == "false" || t.name == "none" || t.name == "True" ||
      t.name == "False" || t.name == "None") {
    error(pos, "cannot assign to '" + t.name + "'");
  }
  return t;
}

std::vector<MacroParam> Parser::parse_params() {
  std::vector<MacroParam> params;
  expect_op("(");
  while (!at_op(")")) {
    if (!params.empty()) expect_op(",");
    if (at_op(")")) break;
    MacroParam param;
    SourcePos pos = cur().pos;
    param.name = expect_name();
    if (skip_op("=")) {
      param.default_value = parse_expression();
    } else if (!params.empty() && params.back().default_value) {
      error(pos, "parameter without a default follows a parameter with a default");
    }
    params.push_back(std::move(param));
  }
  expect_op(")");
  return params;
}

Body Parser::parse_macro_body(MacroStmt& scope, std::string_view end_tag,
                              std::string_view opened_by, SourcePos pos) {
  macros_.push_back(&scope);
  int saved_loop_depth = loop_depth_;
  loop_depth_ = 0;
  Body body = parse_body({end_tag}, opened_by, pos);
  loop_depth_ = saved_loop_depth;
  macros_.pop_back();
  end_block_tag(end_tag);
  return body;
}

StmtPtr Parser::parse_macro(SourcePos pos) {
  auto stmt = std::make_unique<MacroStmt>(pos);
  stmt->name = expect_name();
  stmt->params = parse_params();
  expect_block_end();
  stmt->body = parse_macro_body(*stmt, "endmacro", "macro", pos);
  return stmt;
}

StmtPtr Parser::parse_call_block(SourcePos pos) {
  auto stmt = std::make_unique<CallBlockStmt>(pos);
  if (at_op("(")) stmt->caller_params = parse_params();
  ExprPtr call = parse_expression();
  if (call->kind != ExprKind::Call) error(call->pos, "expected a macro call after 'call'");
  stmt->call.reset(static_cast<CallExpr*>(call.release()));
  expect_block_end();
  // The body becomes the `caller` macro: it may use varargs/kwargs of its own.
  MacroStmt caller_scope(pos);
  stmt->body = parse_macro_body(caller_scope, "endcall", "call", pos);
  return stmt;
}

StmtPtr Parser::parse_filter_block(SourcePos pos) {
  auto stmt = std::make_unique<FilterBlockStmt>(pos);
  stmt->filters.push_back(parse_filter(nullptr));
  while (skip_op("|")) stmt->filters.push_back(parse_filter(nullptr));
  expect_block_end();
  stmt->body = parse_body({"endfilter"}, "filter", pos);
  end_block_tag("endfilter");
  return stmt;
}

StmtPtr Parser::parse_with(SourcePos pos) {
  auto stmt = std::make_unique<WithStmt>(pos);
  while (cur().type != TokenType::BlockEnd) {
    if (!stmt->assignments.empty()) expect_op(",");
    Target target = parse_target_item();
    expect_op("=");
    stmt->assignments.emplace_back(std::move(target), parse_expression());
  }
  expect_block_end();
  stmt->body = parse_body({"endwith"}, "with", pos);
  end_block_tag("endwith");
  return stmt;
}

StmtPtr Parser::parse_scope_block(SourcePos pos, std::string_view end_tag) {
  auto stmt = std::make_unique<ScopeStmt>(pos);
  expect_block_end();
  stmt->body = parse_body({end_tag}, end_tag.substr(3), pos);
  end_block_tag(end_tag);
  return stmt;
}

}  // namespace strata::chat
