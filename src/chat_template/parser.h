// Recursive-descent parser for the Jinja2 template language, following the grammar and
// operator precedence of Jinja2's own parser (jinja2/parser.py).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat_template/ast.h"

namespace strata::chat {

// Throws strata::Error("name:line:col: message") for malformed templates.
Program parse_template(std::string_view source, const std::string& template_name);

// Parser state shared by the statement and expression halves (parse_stmt.cpp and
// parse_expr.cpp).
class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& template_name);
  Program parse_program();

  // Nesting limits: they keep both parsing and evaluation well inside the stack.
  static constexpr int kMaxNesting = 128;     // nested blocks, or nested brackets and unary ops
  static constexpr int kMaxExprDepth = 1000;  // height of one expression tree

 private:
  // ---- statements (parse_stmt.cpp)
  // Parses until `{% tag` for one of end_tags; leaves the cursor on that tag's name.
  Body parse_body(std::initializer_list<std::string_view> end_tags, std::string_view opened_by,
                  SourcePos opened_at);
  StmtPtr parse_statement();
  StmtPtr parse_for(SourcePos pos);
  StmtPtr parse_if(SourcePos pos);
  StmtPtr parse_set(SourcePos pos);
  StmtPtr parse_macro(SourcePos pos);
  StmtPtr parse_call_block(SourcePos pos);
  // A macro's body through `{% end_tag %}`, or a call block's (which becomes the `caller`
  // macro): `scope` records its uses of varargs, kwargs and caller, and `break` and
  // `continue` do not reach loops outside it.
  Body parse_macro_body(MacroStmt& scope, std::string_view end_tag, std::string_view opened_by,
                        SourcePos pos);
  StmtPtr parse_filter_block(SourcePos pos);
  StmtPtr parse_with(SourcePos pos);
  StmtPtr parse_scope_block(SourcePos pos, std::string_view end_tag);
  std::vector<MacroParam> parse_params();
  Target parse_target(bool allow_namespace);
  Target parse_target_item();
  void end_block_tag(std::string_view tag);  // consumes `endtag [name] %}`

  // ---- expressions (parse_expr.cpp)
 public:
  ExprPtr parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end = {});
  ExprPtr parse_expression(bool with_condexpr = true);

 private:
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  std::unique_ptr<FilterExpr> parse_filter(ExprPtr operand);
  ExprPtr parse_test(ExprPtr operand);
  Arguments parse_call_args(Expr& owner);
  ExprPtr make_binary(BinaryOp op, SourcePos pos, ExprPtr left, ExprPtr right);
  void attach(Expr& parent, const ExprPtr& child);  // tracks subtree height
  std::string parse_dotted_name();

  // ---- token helpers
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const;
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool at_op(std::string_view op) const {
    return cur().type == TokenType::Operator && cur().text == op;
  }
  bool at_name(std::string_view name) const {
    return cur().type == TokenType::Name && cur().text == name;
  }
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  void expect_op(std::string_view op);
  std::string expect_name();
  void expect_block_end();
  [[noreturn]] void error(SourcePos pos, const std::string& message) const;
  [[noreturn]] void unexpected(const std::string& expected) const;
  std::string describe(const Token& t) const;

  // Counts one level of nesting for the duration of a recursive parse call.
  class NestingGuard {
   public:
    explicit NestingGuard(Parser& p) : p_(p) {
      if (++p_.nesting_ > kMaxNesting) p_.error(p_.cur().pos, "template nested too deeply");
    }
    ~NestingGuard() { --p_.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    Parser& p_;
  };

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  const std::string& name_;
  int nesting_ = 0;
  int loop_depth_ = 0;
  std::vector<MacroStmt*> macros_;  // macros being parsed, innermost last
};

}  // namespace strata::chat
