// Syntax tree of a parsed template. Nodes are plain structs tagged with a kind; the
// renderer switches on the kind. Every node records where it starts so runtime errors can
// name the line and column.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat_template/lexer.h"
#include "chat_template/value.h"

namespace strata::chat {

// ---- expressions ----------------------------------------------------------------------------

enum class ExprKind : uint8_t {
  Literal,
  Name,
  Attr,
  Item,
  Slice,
  Call,
  Filter,
  Test,
  Unary,
  Binary,
  Compare,
  Cond,
  List,
  Dict,
};

struct Expr {
  ExprKind kind;
  SourcePos pos;
  int depth = 1;  // height of this subtree; the parser bounds it so evaluation cannot overflow
  explicit Expr(ExprKind k, SourcePos p) : kind(k), pos(p) {}
  virtual ~Expr() = default;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  ExprPtr star_args;    // *args
  ExprPtr star_kwargs;  // **kwargs
};

struct LiteralExpr : Expr {
  Value value;  // scalars only: containers are built fresh by ListExpr/DictExpr
  LiteralExpr(SourcePos p, Value v) : Expr(ExprKind::Literal, p), value(std::move(v)) {}
};

struct NameExpr : Expr {
  std::string name;
  NameExpr(SourcePos p, std::string n) : Expr(ExprKind::Name, p), name(std::move(n)) {}
};

struct AttrExpr : Expr {  // object.name
  ExprPtr object;
  std::string name;
  AttrExpr(SourcePos p) : Expr(ExprKind::Attr, p) {}
};

struct ItemExpr : Expr {  // object[index]
  ExprPtr object, index;
  ItemExpr(SourcePos p) : Expr(ExprKind::Item, p) {}
};

struct SliceExpr : Expr {  // object[start:stop:step]; omitted parts are null
  ExprPtr object, start, stop, step;
  SliceExpr(SourcePos p) : Expr(ExprKind::Slice, p) {}
};

struct CallExpr : Expr {
  ExprPtr callee;
  Arguments args;
  CallExpr(SourcePos p) : Expr(ExprKind::Call, p) {}
};

struct FilterExpr : Expr {  // operand | name(args); operand is null inside filter blocks
  ExprPtr operand;
  std::string name;
  Arguments args;
  FilterExpr(SourcePos p) : Expr(ExprKind::Filter, p) {}
};

struct TestExpr : Expr {  // operand is [not] name(args)
  ExprPtr operand;
  std::string name;
  Arguments args;
  bool negated = false;
  TestExpr(SourcePos p) : Expr(ExprKind::Test, p) {}
};

enum class UnaryOp : uint8_t { Neg, Pos, Not };
struct UnaryExpr : Expr {
  UnaryOp op;
  ExprPtr operand;
  UnaryExpr(SourcePos p, UnaryOp o) : Expr(ExprKind::Unary, p), op(o) {}
};

enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Concat, And, Or };
struct BinaryExpr : Expr {
  BinaryOp op;
  ExprPtr left, right;
  BinaryExpr(SourcePos p, BinaryOp o) : Expr(ExprKind::Binary, p), op(o) {}
};

enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };
struct CompareExpr : Expr {  // first op1 e1 op2 e2 ... (chained like Python)
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
  CompareExpr(SourcePos p) : Expr(ExprKind::Compare, p) {}
};

struct CondExpr : Expr {  // then_expr if test else else_expr; else_expr may be null
  ExprPtr test, then_expr, else_expr;
  CondExpr(SourcePos p) : Expr(ExprKind::Cond, p) {}
};

struct ListExpr : Expr {  // [a, b] or (a, b)
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  ListExpr(SourcePos p, bool tuple) : Expr(ExprKind::List, p), is_tuple(tuple) {}
};

struct DictExpr : Expr {
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
  DictExpr(SourcePos p) : Expr(ExprKind::Dict, p) {}
};

// ---- statements -----------------------------------------------------------------------------

enum class StmtKind : uint8_t {
  Text,
  Print,
  If,
  For,
  Set,
  SetBlock,
  Macro,
  CallBlock,
  FilterBlock,
  With,
  Break,
  Continue,
  Do,
  Scope,
};

struct Stmt {
  StmtKind kind;
  SourcePos pos;
  explicit Stmt(StmtKind k, SourcePos p) : kind(k), pos(p) {}
  virtual ~Stmt() = default;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Assignment target: a name, `namespace.attr`, or a (nested) tuple of targets.
struct Target {
  std::string name;
  std::string attr;  // non-empty for `set ns.attr = ...`
  std::vector<Target> items;
  bool is_tuple = false;
};

struct TextStmt : Stmt {
  std::string text;
  TextStmt(SourcePos p, std::string t) : Stmt(StmtKind::Text, p), text(std::move(t)) {}
};

struct PrintStmt : Stmt {
  ExprPtr expr;
  PrintStmt(SourcePos p) : Stmt(StmtKind::Print, p) {}
};

struct IfStmt : Stmt {
  std::vector<std::pair<ExprPtr, Body>> branches;  // if / elif ...
  Body else_body;
  IfStmt(SourcePos p) : Stmt(StmtKind::If, p) {}
};

struct ForStmt : Stmt {
  Target target;
  ExprPtr iter;
  ExprPtr filter;  // `for x in xs if cond`
  bool recursive = false;
  Body body, else_body;
  ForStmt(SourcePos p) : Stmt(StmtKind::For, p) {}
};

struct SetStmt : Stmt {
  Target target;
  ExprPtr value;
  SetStmt(SourcePos p) : Stmt(StmtKind::Set, p) {}
};

struct SetBlockStmt : Stmt {  // {% set x | filters %}body{% endset %}
  Target target;
  std::vector<std::unique_ptr<FilterExpr>> filters;
  Body body;
  SetBlockStmt(SourcePos p) : Stmt(StmtKind::SetBlock, p) {}
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct MacroStmt : Stmt {
  std::string name;
  std::vector<MacroParam> params;
  Body body;
  bool uses_varargs = false, uses_kwargs = false, uses_caller = false;
  MacroStmt(SourcePos p) : Stmt(StmtKind::Macro, p) {}
};

struct CallBlockStmt : Stmt {  // {% call(params) macro(args) %}body{% endcall %}
  std::vector<MacroParam> caller_params;
  std::unique_ptr<CallExpr> call;
  Body body;
  CallBlockStmt(SourcePos p) : Stmt(StmtKind::CallBlock, p) {}
};

struct FilterBlockStmt : Stmt {
  std::vector<std::unique_ptr<FilterExpr>> filters;
  Body body;
  FilterBlockStmt(SourcePos p) : Stmt(StmtKind::FilterBlock, p) {}
};

struct WithStmt : Stmt {
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
  WithStmt(SourcePos p) : Stmt(StmtKind::With, p) {}
};

struct DoStmt : Stmt {
  ExprPtr expr;
  DoStmt(SourcePos p) : Stmt(StmtKind::Do, p) {}
};

// `generation` (transformers' assistant-mask extension) and `block`: their body renders
// in place.
struct ScopeStmt : Stmt {
  Body body;
  ScopeStmt(SourcePos p) : Stmt(StmtKind::Scope, p) {}
};

struct Program {
  Body body;
};

}  // namespace strata::chat
