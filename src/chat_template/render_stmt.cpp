// Statement execution: output, control flow, assignment, loops, macros and call blocks.
#include <pthread.h>

#include <algorithm>

#include "chat_template/builtins.h"
#include "chat_template/renderer.h"
#include "core/error.h"

namespace strata::chat {

namespace {

// Native stack the interpreter may use for its recursion. Deep templates fail cleanly with
// an error once it is spent instead of overflowing the thread's stack.
constexpr size_t kMaxStackBytes = size_t{2} << 20;
// Kept free below the budget for the frames that report the error and unwind.
constexpr size_t kStackReserve = size_t{256} << 10;

// Lowest usable address of the calling thread's stack, or null if unknown; cached per
// thread because glibc reads /proc/self/maps to answer for the main thread.
const char* thread_stack_low() {
#if defined(__GLIBC__)
  thread_local const char* low = [] {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return static_cast<const char*>(nullptr);
    void* addr = nullptr;
    size_t size = 0;
    int rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    return rc == 0 ? static_cast<const char*>(addr) : nullptr;
  }();
  return low;
#else
  return nullptr;
#endif
}

// How far below `base` the interpreter may recurse on this thread.
size_t stack_budget(const char* base) {
  const char* low = thread_stack_low();
  if (low == nullptr || base <= low) return kMaxStackBytes;
  size_t remaining = static_cast<size_t>(base - low);
  if (remaining <= 2 * kStackReserve) return remaining / 2;
  return std::min(kMaxStackBytes, remaining - kStackReserve);
}

}  // namespace

// ---- scopes ---------------------------------------------------------------------------------

const Value* Scope::find(std::string_view name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
    for (const auto& [k, v] : s->vars) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Scope::set(std::string_view name, Value value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(std::string(name), std::move(value));
}

void fail_undefined(const Value& v) {
  const std::string& hint = v.is_undefined() ? v.undefined_hint() : std::string();
  fail(hint.empty() ? "value is undefined" : hint);
}

// ---- renderer -------------------------------------------------------------------------------

Renderer::Renderer(const std::string& template_name, const SandboxLimits& limits,
                   const BudgetLimits& budget, std::time_t now)
    : name_(template_name), limits_(limits), budget_(budget), now_(now) {}

Renderer::~Renderer() {
  // Values never outlive a render, so any container that a mutation may have linked into
  // a reference cycle can be emptied now; that frees the cycle.
  for (Mutated& m : mutated_) {
    if (auto list = m.list.lock()) list->clear();
    if (auto dict = m.dict.lock()) dict->clear();
  }
}

std::string Renderer::render(const Program& program, const ScopePtr& globals) {
  // The real frame address, not a local's: sanitizers may move locals off the stack.
  stack_base_ = static_cast<const char*>(__builtin_frame_address(0));
  stack_budget_ = stack_budget(stack_base_);
  root_ = globals;
  // Values created from here on charge this render's budget.
  BudgetInstall install(&budget_);
  std::string out;
  out_ = &out;
  exec_body(program.body, globals);
  out_ = nullptr;
  return out;
}

void Renderer::error_at(SourcePos pos, const std::string& message) const {
  throw strata::Error(format_error(name_, pos, message));
}

void Renderer::check_stack(SourcePos pos) const {
  const char* here = static_cast<const char*>(__builtin_frame_address(0));
  if (here<stack_base_&& static_cast<size_t>(stack_base_ - here)> stack_budget_) {
    error_at(pos, "template recursion too deep (native stack limit reached)");
  }
}

void Renderer::check_text_size(size_t bytes) const {
  if (bytes > limits_.max_output_bytes) {
    fail("output size limit exceeded (" + std::to_string(limits_.max_output_bytes) + " bytes)");
  }
}

void Renderer::count_iterations(int64_t n) {
  iterations_ += n;
  if (n < 0 || iterations_ > limits_.max_loop_iterations) {
    fail("loop iteration limit exceeded (" + std::to_string(limits_.max_loop_iterations) +
         " iterations)");
  }
}

void Renderer::note_mutation(const Value& container, const Value& inserted) {
  if (!inserted.is_container()) return;
  // Loops that keep filling one container would otherwise record it once per insertion.
  if (!mutated_.empty()) {
    const Mutated& last = mutated_.back();
    if (container.is_list() && !last.list.owner_before(container.list_ptr()) &&
        !container.list_ptr().owner_before(last.list)) {
      return;
    }
    if (container.is_dict() && !last.dict.owner_before(container.dict_ptr()) &&
        !container.dict_ptr().owner_before(last.dict)) {
      return;
    }
  }
  if (container.is_list()) mutated_.push_back({container.list_ptr(), {}});
  if (container.is_dict()) mutated_.push_back({{}, container.dict_ptr()});
}

void Renderer::emit(std::string_view text) {
  if (out_->size() + text.size() > limits_.max_output_bytes) {
    fail("output size limit exceeded (" + std::to_string(limits_.max_output_bytes) + " bytes)");
  }
  // Output and capture buffers are memory the template controls, like values.
  budget_.work(text.size() / kBytesPerUnit);
  budget_.alloc(text.size());
  out_->append(text);
}

std::string Renderer::capture(const Body& body, const ScopePtr& scope) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    exec_body(body, scope);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  // The caller turns the buffer into a value, which charges its bytes again.
  budget_.release(buffer.size());
  return buffer;
}

Flow Renderer::exec_body(const Body& body, const ScopePtr& scope) {
  for (const StmtPtr& stmt : body) {
    Flow flow = exec(*stmt, scope);
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

Flow Renderer::exec(const Stmt& stmt, const ScopePtr& scope) {
  check_stack(stmt.pos);
  try {
    budget_.work(kStepUnits);
    switch (stmt.kind) {
      case StmtKind::Text:
        emit(static_cast<const TextStmt&>(stmt).text);
        break;
      case StmtKind::Print: {
        Value v = eval(*static_cast<const PrintStmt&>(stmt).expr, scope);
        if (v.is_string()) {
          emit(v.str());
        } else {
          emit(to_str(v, limits_.max_output_bytes));
        }
        break;
      }
      case StmtKind::If: {
        const auto& s = static_cast<const IfStmt&>(stmt);
        for (const auto& [cond, body] : s.branches) {
          if (truthy(eval(*cond, scope))) return exec_body(body, scope);
        }
        return exec_body(s.else_body, scope);
      }
      case StmtKind::For:
        return exec_for(static_cast<const ForStmt&>(stmt), scope);
      case StmtKind::Set: {
        const auto& s = static_cast<const SetStmt&>(stmt);
        assign(s.target, eval(*s.value, scope), scope, s.pos);
        break;
      }
      case StmtKind::SetBlock: {
        const auto& s = static_cast<const SetBlockStmt&>(stmt);
        Value v = Value::string(capture(s.body, std::make_shared<Scope>(scope)));
        for (const auto& f : s.filters) v = apply_filter(*f, std::move(v), scope);
        assign(s.target, std::move(v), scope, s.pos);
        break;
      }
      case StmtKind::Macro: {
        const auto& s = static_cast<const MacroStmt&>(stmt);
        scope->set(s.name, define_macro(s, scope));
        break;
      }
      case StmtKind::CallBlock:
        exec_call_block(static_cast<const CallBlockStmt&>(stmt), scope);
        break;
      case StmtKind::FilterBlock: {
        const auto& s = static_cast<const FilterBlockStmt&>(stmt);
        Value v = Value::string(capture(s.body, std::make_shared<Scope>(scope)));
        for (const auto& f : s.filters) v = apply_filter(*f, std::move(v), scope);
        emit(to_str(v, limits_.max_output_bytes));
        break;
      }
      case StmtKind::With: {
        const auto& s = static_cast<const WithStmt&>(stmt);
        auto inner = std::make_shared<Scope>(scope);
        for (const auto& [target, expr] : s.assignments)
          assign(target, eval(*expr, scope), inner, s.pos);
        return exec_body(s.body, inner);
      }
      case StmtKind::Break:
        return Flow::Break;
      case StmtKind::Continue:
        return Flow::Continue;
      case StmtKind::Do:
        eval(*static_cast<const DoStmt&>(stmt).expr, scope);
        break;
      case StmtKind::Scope:
        return exec_body(static_cast<const ScopeStmt&>(stmt).body, scope);
    }
  } catch (const TemplateRuntimeError& e) {
    error_at(stmt.pos, e.what());
  }
  return Flow::Normal;
}

void Renderer::assign(const Target& target, Value value, const ScopePtr& scope, SourcePos pos) {
  if (!target.attr.empty()) {
    const Value* ns = scope->find(target.name);
    if (!ns || !ns->is_dict() || ns->dict().flavor != DictFlavor::Namespace) {
      error_at(pos, "cannot assign attribute '" + target.attr + "' on '" + target.name +
                        "': it is not a namespace object");
    }
    note_mutation(*ns, value);
    ns->dict().set(Value::string(target.attr), std::move(value));
    return;
  }
  if (!target.is_tuple) {
    scope->set(target.name, std::move(value));
    return;
  }
  std::vector<Value> items = iterate(value);
  if (items.size() != target.items.size()) {
    error_at(
        pos,
        items.size() > target.items.size()
            ? "too many values to unpack (expected " + std::to_string(target.items.size()) + ")"
            : "not enough values to unpack (expected " + std::to_string(target.items.size()) +
                  ", got " + std::to_string(items.size()) + ")");
  }
  for (size_t i = 0; i < items.size(); ++i)
    assign(target.items[i], std::move(items[i]), scope, pos);
}

// ---- for loops ------------------------------------------------------------------------------

namespace {

// State behind loop.cycle() and loop.changed(), shared with the closures stored in `loop`.
struct LoopState {
  int64_t index0 = 0;
  bool has_last = false;
  Value last_changed;
};

}  // namespace

Flow Renderer::exec_for(const ForStmt& stmt, const ScopePtr& scope) {
  Value iterable = eval(*stmt.iter, scope);
  auto loop_scope = std::make_shared<Scope>(scope);
  // An unfiltered list is iterated live, by index, like Python's list iterator: items the
  // body appends are visited too. Other iterables are snapshotted (and filtered) first.
  const bool live = iterable.is_list() && !stmt.filter;
  std::vector<Value> snapshot;
  if (!live) {
    snapshot = iterate(iterable);
    if (stmt.filter) {
      std::vector<Value> kept;
      for (Value& item : snapshot) {
        count_iterations(1);
        assign(stmt.target, item, loop_scope, stmt.pos);
        if (truthy(eval(*stmt.filter, loop_scope))) kept.push_back(std::move(item));
      }
      snapshot = std::move(kept);
    }
  }
  const std::vector<Value>& items = live ? iterable.list().items : snapshot;
  if (items.empty()) return exec_body(stmt.else_body, scope);

  auto state = std::make_shared<LoopState>();
  Value loop = Value::make_dict();
  DictObj& fields = loop.dict();
  fields.flavor = DictFlavor::Loop;
  const char* const kNames[] = {"index",  "index0",   "revindex", "revindex0", "first", "last",
                                "length", "previtem", "nextitem", "depth",     "depth0"};
  for (const char* n : kNames) fields.set(Value::string(n), Value());
  fields.set(Value::string("cycle"), Value::function("cycle", [state](Renderer&, CallArgs& args) {
               if (args.positional.empty()) fail("no items for cycling given");
               size_t n = args.positional.size();
               return args.positional[static_cast<size_t>(state->index0) % n];
             }));
  fields.set(Value::string("changed"),
             Value::function("changed", [state](Renderer&, CallArgs& args) {
               Value current = Value::make_list(args.positional, true);
               if (state->has_last && equals(current, state->last_changed))
                 return Value::boolean(false);
               state->has_last = true;
               state->last_changed = std::move(current);
               return Value::boolean(true);
             }));
  loop_scope->set("loop", loop);
  // `changed` may have stored a value that references `loop` itself; drop it on exit.
  struct ClearState {
    LoopState& state;
    ~ClearState() { state.last_changed = Value(); }
  } clear_state{*state};

  Value previous = Value::undefined("there is no previous item");
  for (size_t i = 0; i < items.size(); ++i) {
    count_iterations(1);
    state->index0 = static_cast<int64_t>(i);
    const int64_t index = static_cast<int64_t>(i), length = static_cast<int64_t>(items.size());
    Value item = items[i];  // copied: the body may modify the list
    auto& e = fields.entries;
    e[0].second = Value::integer(index + 1);
    e[1].second = Value::integer(index);
    e[2].second = Value::integer(length - index);
    e[3].second = Value::integer(length - index - 1);
    e[4].second = Value::boolean(index == 0);
    e[5].second = Value::boolean(index == length - 1);
    e[6].second = Value::integer(length);
    e[7].second = previous;
    e[8].second = index + 1 < length ? items[i + 1] : Value::undefined("there is no next item");
    e[9].second = Value::integer(1);
    e[10].second = Value::integer(0);
    // Each iteration gets a fresh scope: in Jinja2 assignments in a loop body neither
    // leave the loop nor carry over to the next iteration.
    auto iteration_scope = std::make_shared<Scope>(loop_scope);
    assign(stmt.target, item, iteration_scope, stmt.pos);
    previous = std::move(item);
    if (exec_body(stmt.body, iteration_scope) == Flow::Break) break;
  }
  return Flow::Normal;
}

// ---- macros ---------------------------------------------------------------------------------

Value Renderer::define_macro(const MacroStmt& macro, const ScopePtr& scope) {
  // The closure holds its defining scope weakly: a strong reference would form a cycle
  // through the scope that stores the macro.
  std::weak_ptr<Scope> defined_in = scope;
  const MacroStmt* m = &macro;
  return Value::function(macro.name, [this, m, defined_in](Renderer&, CallArgs& args) {
    return invoke_macro(*m, m->params, m->body, defined_in, args, nullptr);
  });
}

Value Renderer::invoke_macro(const MacroStmt& macro, const std::vector<MacroParam>& params,
                             const Body& body, const std::weak_ptr<Scope>& defined_in,
                             CallArgs& args, const Value* caller) {
  if (macro_depth_ >= limits_.max_recursion_depth) {
    fail("maximum macro recursion depth exceeded (" + std::to_string(limits_.max_recursion_depth) +
         ")");
  }
  // A call allocates a scope, binds arguments and captures output: several units' worth,
  // and what makes exponential recursion (f calling f twice per level) hit the budget.
  budget_.work(kMacroCallUnits);
  ScopePtr parent = defined_in.lock();
  auto scope = std::make_shared<Scope>(parent ? parent : root_);
  const std::string& name = macro.name.empty() ? std::string("caller") : macro.name;
  std::vector<bool> bound(params.size(), false);
  std::vector<Value> varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < params.size()) {
      scope->set(params[i].name, args.positional[i]);
      bound[i] = true;
    } else if (macro.uses_varargs) {
      varargs.push_back(args.positional[i]);
    } else {
      fail("macro '" + name + "' takes not more than " + std::to_string(params.size()) +
           " argument(s)");
    }
  }
  Value kwargs = Value::make_dict();
  Value caller_value = caller ? *caller : Value();
  for (auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < params.size() && params[i].name != key) ++i;
    if (i < params.size()) {
      if (bound[i]) fail("macro '" + name + "' got multiple values for argument '" + key + "'");
      scope->set(key, value);
      bound[i] = true;
    } else if (key == "caller" && macro.uses_caller) {
      caller_value = value;
    } else if (macro.uses_kwargs) {
      kwargs.dict().set(Value::string(key), value);
    } else {
      fail("macro '" + name + "' takes no keyword argument '" + key + "'");
    }
  }
  ++macro_depth_;
  struct DepthRestore {
    int& depth;
    ~DepthRestore() { --depth; }
  } restore{macro_depth_};
  for (size_t i = 0; i < params.size(); ++i) {
    if (bound[i]) continue;
    if (params[i].default_value) {
      scope->set(params[i].name, eval(*params[i].default_value, scope));
    } else {
      scope->set(params[i].name,
                 Value::undefined("parameter '" + params[i].name + "' was not provided"));
    }
  }
  scope->set("varargs", Value::make_list(std::move(varargs), true));
  scope->set("kwargs", kwargs);
  if (!caller_value.is_undefined()) scope->set("caller", caller_value);
  return Value::string(capture(body, scope));
}

void Renderer::exec_call_block(const CallBlockStmt& stmt, const ScopePtr& scope) {
  std::weak_ptr<Scope> defined_in = scope;
  const CallBlockStmt* s = &stmt;
  // `caller` behaves as an anonymous macro whose parameters are the call block's.
  auto caller_macro = std::make_shared<MacroStmt>(stmt.pos);
  caller_macro->uses_varargs = true;
  caller_macro->uses_kwargs = true;
  Value caller =
      Value::function("caller", [this, s, defined_in, caller_macro](Renderer&, CallArgs& args) {
        return invoke_macro(*caller_macro, s->caller_params, s->body, defined_in, args, nullptr);
      });
  Value callee = eval(*stmt.call->callee, scope);
  CallArgs args = eval_args(stmt.call->args, scope);
  args.keyword.emplace_back("caller", caller);
  emit(to_str(call(callee, args), limits_.max_output_bytes));
}

}  // namespace strata::chat
