#include "chat_template/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat_template/budget.h"
#include "chat_template/unicode.h"

namespace strata::chat {

void fail(const std::string& message) {
  throw TemplateRuntimeError(message);
}

// ---- construction -------------------------------------------------------------------------

namespace {

// A string value's text together with what it charged, given back when the last
// reference dies (Value::Text points into it through shared_ptr's aliasing constructor).
struct TrackedText {
  std::string text;
  uint64_t charged;
  TrackedText(std::string t, uint64_t c) : text(std::move(t)), charged(c) {}
  TrackedText(const TrackedText&) = delete;
  TrackedText& operator=(const TrackedText&) = delete;
  ~TrackedText() { release_bytes(charged); }
};

}  // namespace

Value Value::string(std::string s) {
  RenderBudget* budget = t_render_budget;
  if (budget == nullptr) return Value(Storage(Text(std::make_shared<std::string>(std::move(s)))));
  // Every string operation ends here, so charging the bytes produced here makes replace,
  // join, ~, *, format, tojson, ... cost what they build.
  const uint64_t bytes = kStringValueBytes + s.size();
  budget->work(kItemUnits + s.size() / kBytesPerUnit);  // an allocation, then a copy
  budget->alloc(bytes);
  auto owner = std::make_shared<TrackedText>(std::move(s), bytes);
  return Value(Storage(Text(owner, &owner->text)));
}

Value Value::make_list(std::vector<Value> items, bool is_tuple) {
  auto obj = std::make_shared<ListObj>();
  obj->items = std::move(items);
  obj->is_tuple = is_tuple;
  if (t_render_budget) {
    obj->charged = kContainerBytes;
    charge_work(kItemUnits);
    charge_bytes(kContainerBytes);
    obj->account(obj->items.size());
  }
  return from(std::move(obj));
}

Value Value::make_dict() {
  auto obj = std::make_shared<DictObj>();
  if (t_render_budget) {
    obj->charged = kContainerBytes;
    charge_work(kItemUnits);
    charge_bytes(kContainerBytes);
  }
  return from(std::move(obj));
}

void ListObj::account(size_t added_items) {
  if (!t_render_budget) return;
  charge_work(1 + added_items * kItemUnits);
  charge_bytes(added_items * kListItemBytes);
  charged += added_items * kListItemBytes;
}

void DictObj::account(size_t added_entries) {
  if (!t_render_budget) return;
  charge_work(1 + added_entries * kItemUnits);
  charge_bytes(added_entries * kDictEntryBytes);
  charged += added_entries * kDictEntryBytes;
}

Value Value::function(std::string name, std::function<Value(Renderer&, CallArgs&)> fn) {
  auto obj = std::make_shared<FunctionObj>();
  obj->name = std::move(name);
  obj->call = std::move(fn);
  return from(std::move(obj));
}

const std::string& Value::undefined_hint() const {
  static const std::string kEmpty;
  const Text& hint = std::get<UndefinedTag>(v_).hint;
  return hint ? *hint : kEmpty;
}

std::string Value::take_str() {
  Text& text = std::get<Text>(v_);
  // Strings are created non-const (see string()), so a sole owner may move the text out.
  if (text.use_count() == 1) return std::move(const_cast<std::string&>(*text));
  return *text;
}

int64_t Value::as_int() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  return std::get<int64_t>(v_);
}

double Value::as_double() const {
  if (is_float()) return std::get<double>(v_);
  return static_cast<double>(as_int());
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::List:
      return std::get<ListPtr>(v_).get();
    case Kind::Dict:
      return std::get<DictPtr>(v_).get();
    case Kind::Function:
      return std::get<FuncPtr>(v_).get();
    default:
      return nullptr;
  }
}

std::shared_ptr<void> Value::release_if_unique() {
  auto take = [](auto& p) -> std::shared_ptr<void> {
    if (p.use_count() != 1) return nullptr;
    return std::shared_ptr<void>(std::move(p));
  };
  switch (kind()) {
    case Kind::List:
      return take(std::get<ListPtr>(v_));
    case Kind::Dict:
      return take(std::get<DictPtr>(v_));
    case Kind::Function:
      return take(std::get<FuncPtr>(v_));
    default:
      return nullptr;
  }
}

// ---- iterative destruction ------------------------------------------------------------------
// A list nested a million deep would overflow the stack if each destructor destroyed its
// children recursively. Instead the outermost dying container collects the containers that
// die with it into a graveyard and destroys them one at a time.

namespace {

thread_local std::vector<std::shared_ptr<void>>* t_graveyard = nullptr;

template <typename Fn>
void bury_children(Fn&& for_each_child) {
  bool outermost = t_graveyard == nullptr;
  std::vector<std::shared_ptr<void>> local;
  if (outermost) t_graveyard = &local;
  for_each_child([](Value& v) {
    if (std::shared_ptr<void> p = v.release_if_unique()) t_graveyard->push_back(std::move(p));
  });
  if (!outermost) return;
  while (!local.empty()) {
    std::shared_ptr<void> p = std::move(local.back());
    local.pop_back();
    p.reset();  // may push more children onto `local`
  }
  t_graveyard = nullptr;
}

}  // namespace

ListObj::~ListObj() {
  release_bytes(charged);
  bury_children([this](auto&& visit) {
    for (Value& v : items) visit(v);
  });
}

DictObj::~DictObj() {
  release_bytes(charged);
  bury_children([this](auto&& visit) {
    for (auto& [k, v] : entries) visit(v);
  });
}

void ListObj::clear() {
  std::vector<Value> dead = std::move(items);
  items.clear();
  bury_children([&dead](auto&& visit) {
    for (Value& v : dead) visit(v);
  });
}

void DictObj::clear() {
  std::vector<std::pair<Value, Value>> dead = std::move(entries);
  entries.clear();
  index_.reset();
  bury_children([&dead](auto&& visit) {
    for (auto& [k, v] : dead) visit(v);
  });
}

// ---- dict -----------------------------------------------------------------------------------

namespace {
constexpr size_t kIndexThreshold = 16;
}

std::string hash_key(const Value& key) {
  switch (key.kind()) {
    case Kind::Undefined:
      return "u";
    case Kind::None:
      return "n";
    case Kind::Bool:
    case Kind::Int:
      return "i" + std::to_string(key.as_int());
    case Kind::Float: {
      double d = key.as_double();
      if (d == std::floor(d) && std::fabs(d) < 9.2e18)
        return "i" + std::to_string(static_cast<int64_t>(d));
      return "f" + format_float(d);
    }
    case Kind::String:
      charge_work(key.str().size());
      return "s" + key.str();
    case Kind::List: {
      if (!key.list().is_tuple) fail("unhashable type: 'list'");
      std::string out = "t(";
      for (const Value& v : key.list().items) {
        std::string part = hash_key(v);
        // Tuples that share their items nest exponentially; their keys may not.
        if (out.size() + part.size() > kDefaultMaxText) fail("dict key too large");
        charge_work(part.size());
        out += std::to_string(part.size()) + ":" + part;
      }
      return out + ")";
    }
    case Kind::Dict:
      fail("unhashable type: 'dict'");
    case Kind::Function: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "p%p", key.identity());
      return buf;
    }
  }
  return "";
}

void DictObj::rebuild_index() const {
  index_ = std::make_unique<std::unordered_map<std::string, size_t>>();
  for (size_t i = 0; i < entries.size(); ++i) index_->emplace(hash_key(entries[i].first), i);
}

const Value* DictObj::find(const Value& key) const {
  if (entries.size() >= kIndexThreshold) {
    if (!index_) rebuild_index();
    auto it = index_->find(hash_key(key));
    return it == index_->end() ? nullptr : &entries[it->second].second;
  }
  if (key.is_list() && !key.list().is_tuple) fail("unhashable type: 'list'");
  if (key.is_dict()) fail("unhashable type: 'dict'");
  for (const auto& [k, v] : entries) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* DictObj::find(std::string_view key) const {
  if (entries.size() >= kIndexThreshold) {
    if (!index_) rebuild_index();
    auto it = index_->find("s" + std::string(key));
    return it == index_->end() ? nullptr : &entries[it->second].second;
  }
  for (const auto& [k, v] : entries) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

void DictObj::set(Value key, Value value) {
  if (const Value* existing = find(key)) {
    const_cast<Value&>(*existing) = std::move(value);
    return;
  }
  std::string hk = hash_key(key);  // validates hashability
  account(1);
  entries.emplace_back(std::move(key), std::move(value));
  if (index_) index_->emplace(std::move(hk), entries.size() - 1);
}

bool DictObj::erase(const Value& key) {
  for (size_t i = 0; i < entries.size(); ++i) {
    if (equals(entries[i].first, key)) {
      entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
      index_.reset();
      return true;
    }
  }
  return false;
}

// ---- Python semantics -----------------------------------------------------------------------

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return v.as_bool();
    case Kind::Int:
      return v.as_int() != 0;
    case Kind::Float:
      return v.as_double() != 0.0;
    case Kind::String:
      return !v.str().empty();
    case Kind::List:
      return !v.list().items.empty();
    case Kind::Dict:
      return v.dict().flavor != DictFlavor::Plain || v.dict().size() > 0;
    case Kind::Function:
      return true;
  }
  return false;
}

namespace {

bool equals_at(const Value& a, const Value& b, int depth) {
  if (depth > kMaxValueDepth) fail("structure too deeply nested (or cyclic) to compare");
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::String:
      charge_work(std::min(a.str().size(), b.str().size()));
      return a.str() == b.str();
    case Kind::List: {
      const ListObj& x = a.list();
      const ListObj& y = b.list();
      if (&x == &y) return true;
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      // Lists that share their items compare in time exponential in their depth.
      charge_work(1 + x.items.size() * kItemUnits);
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!equals_at(x.items[i], y.items[i], depth + 1)) return false;
      }
      return true;
    }
    case Kind::Dict: {
      const DictObj& x = a.dict();
      const DictObj& y = b.dict();
      if (&x == &y) return true;
      if (x.flavor != DictFlavor::Plain || y.flavor != DictFlavor::Plain) return false;
      if (x.size() != y.size()) return false;
      charge_work(1 + x.size() * kItemUnits);
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !equals_at(v, *other, depth + 1)) return false;
      }
      return true;
    }
    case Kind::Function:
      return a.identity() == b.identity();
    default:
      return false;
  }
}

int compare_at(const Value& a, const Value& b, int depth) {
  if (depth > kMaxValueDepth) fail("structure too deeply nested (or cyclic) to compare");
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    charge_work(std::min(a.str().size(), b.str().size()));
    int c = a.str().compare(b.str());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.list().is_tuple == b.list().is_tuple) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    charge_work(1 + std::min(x.size(), y.size()) * kItemUnits);
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals_at(x[i], y[i], depth + 1)) continue;
      return compare_at(x[i], y[i], depth + 1);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  fail("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

// Writes str()/repr() text, refusing to grow past max_bytes or to recurse without end.
struct TextWriter {
  std::string out;
  size_t max_bytes;

  void put(std::string_view s) {
    if (out.size() + s.size() > max_bytes) fail("value too large to convert to text");
    out.append(s);
  }

  void write(const Value& v, bool repr, int depth) {
    if (depth > kMaxValueDepth) fail("structure too deeply nested (or cyclic) to print");
    charge_work(kItemUnits);  // structures that share items print exponentially many
    switch (v.kind()) {
      case Kind::Undefined:
        put(repr ? "Undefined" : "");
        return;
      case Kind::None:
        put("None");
        return;
      case Kind::Bool:
        put(v.as_bool() ? "True" : "False");
        return;
      case Kind::Int:
        put(std::to_string(v.as_int()));
        return;
      case Kind::Float:
        put(format_float(v.as_double()));
        return;
      case Kind::String:
        put(repr ? repr_string(v.str()) : std::string_view(v.str()));
        return;
      case Kind::Function:
        put("<function " + v.func().name + ">");
        return;
      case Kind::List: {
        const ListObj& l = v.list();
        put(l.is_tuple ? "(" : "[");
        for (size_t i = 0; i < l.items.size(); ++i) {
          if (i) put(", ");
          write(l.items[i], true, depth + 1);
        }
        if (l.is_tuple && l.items.size() == 1) put(",");
        put(l.is_tuple ? ")" : "]");
        return;
      }
      case Kind::Dict: {
        const DictObj& d = v.dict();
        if (d.flavor == DictFlavor::Namespace) put("<Namespace ");
        if (d.flavor == DictFlavor::Loop) put("<LoopContext ");
        put("{");
        for (size_t i = 0; i < d.entries.size(); ++i) {
          if (i) put(", ");
          write(d.entries[i].first, true, depth + 1);
          put(": ");
          write(d.entries[i].second, true, depth + 1);
        }
        put("}");
        if (d.flavor != DictFlavor::Plain) put(">");
        return;
      }
    }
  }
};

}  // namespace

bool equals(const Value& a, const Value& b) {
  return equals_at(a, b, 0);
}
int compare(const Value& a, const Value& b) {
  return compare_at(a, b, 0);
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::List:
      return v.list().is_tuple ? "tuple" : "list";
    case Kind::Dict:
      switch (v.dict().flavor) {
        case DictFlavor::Namespace:
          return "Namespace";
        case DictFlavor::Loop:
          return "LoopContext";
        case DictFlavor::Plain:
          return "dict";
      }
      return "dict";
    case Kind::Function:
      return "function";
  }
  return "object";
}

std::string to_str(const Value& v, size_t max_bytes) {
  if (v.is_string()) {
    if (v.str().size() > max_bytes) fail("value too large to convert to text");
    charge_work(v.str().size() / kBytesPerUnit);
    return v.str();
  }
  TextWriter w{{}, max_bytes};
  w.write(v, false, 0);
  return std::move(w.out);
}

std::string to_repr(const Value& v, size_t max_bytes) {
  TextWriter w{{}, max_bytes};
  w.write(v, true, 0);
  return std::move(w.out);
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));  // e.g. "-1.25e+17"
  std::string out;
  if (sci.front() == '-') {
    out.push_back('-');
    sci.remove_prefix(1);
  }
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits.push_back(c);
  }
  int exp = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exp);
  // Python's repr switches to scientific notation outside 1e-4 <= |d| < 1e16.
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      size_t int_len = static_cast<size_t>(exp) + 1;
      if (digits.size() <= int_len) {
        out += digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    } else {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + exp_buf;
}

std::string repr_string(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    char32_t cp = utf8::decode(s, i);
    char buf[16];
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (cp < 0x7F || utf8::is_printable(cp)) {
      utf8::append(out, cp);
    } else {
      if (cp <= 0xFF) {
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      } else if (cp <= 0xFFFF) {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      } else {
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(cp));
      }
      out += buf;
    }
  }
  out.push_back(quote);
  return out;
}

}  // namespace strata::chat
