// Tree-walking interpreter for a parsed template. One Renderer renders one template once:
// it owns the output buffers, the sandbox counters and every value created on the way.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat_template/ast.h"
#include "chat_template/budget.h"
#include "chat_template/value.h"

namespace strata::chat {

// Variables of one block level. Scopes chain to their parent for lookups; assignment
// always writes the innermost scope, as in Jinja2 (hence namespace objects).
struct Scope {
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;

  explicit Scope(std::shared_ptr<Scope> p) : parent(std::move(p)) {}
  const Value* find(std::string_view name) const;  // this scope and its parents
  void set(std::string_view name, Value value);
};
using ScopePtr = std::shared_ptr<Scope>;

struct SandboxLimits {
  int64_t max_loop_iterations;  // total loop iterations (and range() length) in one render
  int max_recursion_depth;      // nested macro calls
  size_t max_output_bytes;      // the output, and any single string built on the way
};

enum class Flow : uint8_t { Normal, Break, Continue };

class Renderer {
 public:
  Renderer(const std::string& template_name, const SandboxLimits& limits,
           const BudgetLimits& budget, std::time_t now);
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Renders the program with `globals` as the outermost scope.
  std::string render(const Program& program, const ScopePtr& globals);

  // ---- services for filters, tests, methods and global functions
  Value call(const Value& callee, CallArgs& args);
  Value get_attr(const Value& object,
                 std::string_view name);                  // Jinja2 getattr: attribute, then item
  Value get_item(const Value& object, const Value& key);  // Jinja2 getitem: item, then attribute
  // Records that `inserted` was stored into `container`; containers that may have become
  // part of a reference cycle are cleared when rendering ends.
  void note_mutation(const Value& container, const Value& inserted);
  void check_text_size(size_t bytes) const;
  void count_iterations(int64_t n);
  const SandboxLimits& limits() const { return limits_; }
  RenderBudget& budget() { return budget_; }
  const RenderBudget& budget() const { return budget_; }
  std::time_t now() const { return now_; }

 private:
  Flow exec_body(const Body& body, const ScopePtr& scope);
  Flow exec(const Stmt& stmt, const ScopePtr& scope);
  Flow exec_for(const ForStmt& stmt, const ScopePtr& scope);
  void exec_call_block(const CallBlockStmt& stmt, const ScopePtr& scope);
  void assign(const Target& target, Value value, const ScopePtr& scope, SourcePos pos);
  std::string capture(const Body& body, const ScopePtr& scope);
  void emit(std::string_view text);
  Value define_macro(const MacroStmt& macro, const ScopePtr& scope);
  Value invoke_macro(const MacroStmt& macro, const std::vector<MacroParam>& params,
                     const Body& body, const std::weak_ptr<Scope>& defined_in, CallArgs& args,
                     const Value* caller);

  Value eval(const Expr& expr, const ScopePtr& scope);
  Value eval_inner(const Expr& expr, const ScopePtr& scope);
  Value eval_compare(const CompareExpr& expr, const ScopePtr& scope);
  Value eval_slice(const SliceExpr& expr, const ScopePtr& scope);
  CallArgs eval_args(const Arguments& args, const ScopePtr& scope);
  Value lookup(const std::string& name, const ScopePtr& scope);
  Value apply_filter(const FilterExpr& filter, Value operand, const ScopePtr& scope);

  [[noreturn]] void error_at(SourcePos pos, const std::string& message) const;
  void check_stack(SourcePos pos) const;

  const std::string& name_;
  SandboxLimits limits_;
  RenderBudget budget_;
  std::time_t now_;
  std::string* out_ = nullptr;
  ScopePtr root_;
  int64_t iterations_ = 0;
  int macro_depth_ = 0;
  const char* stack_base_ = nullptr;  // frame of render(); recursion grows down from it
  size_t stack_budget_ = 0;
  struct Mutated {
    std::weak_ptr<ListObj> list;
    std::weak_ptr<DictObj> dict;
  };
  std::vector<Mutated> mutated_;
};

// Fails with the error Jinja2 raises when an undefined value is used: its hint, if any.
[[noreturn]] void fail_undefined(const Value& v);

}  // namespace strata::chat
