// Methods of Python list and dict objects.
#include <algorithm>

#include "chat_template/budget.h"
#include "chat_template/builtins.h"

namespace strata::chat {

namespace {

using Method = Value (*)(Renderer&, const Value& self, CallArgs& args);

int64_t list_index(const Value& self, int64_t i, bool for_insert) {
  int64_t n = static_cast<int64_t>(self.list().items.size());
  if (i < 0) i += n;
  if (for_insert) return std::clamp<int64_t>(i, 0, n);
  if (i < 0 || i >= n) fail(n == 0 ? "pop from empty list" : "list index out of range");
  return i;
}

void check_list_growth(Renderer& r, size_t size) {
  if (static_cast<int64_t>(size) > r.limits().max_loop_iterations)
    fail("list too large: more items than the loop iteration limit");
}

const std::pair<std::string_view, Method> kListMethods[] = {
    {"append",
     [](Renderer& r, const Value& self, CallArgs& a) {
       BoundArgs b(a, "append", {"object"}, 1);
       check_list_growth(r, self.list().items.size() + 1);
       r.note_mutation(self, b.get(0));
       self.list().account(1);
       self.list().items.push_back(b.get(0));
       return Value::none();
     }},
    {"extend",
     [](Renderer& r, const Value& self, CallArgs& a) {
       BoundArgs b(a, "extend", {"iterable"}, 1);
       std::vector<Value> more = iterate(b.get(0));
       check_list_growth(r, self.list().items.size() + more.size());
       self.list().account(more.size());
       for (Value& v : more) {
         r.note_mutation(self, v);
         self.list().items.push_back(std::move(v));
       }
       return Value::none();
     }},
    {"insert",
     [](Renderer& r, const Value& self, CallArgs& a) {
       BoundArgs b(a, "insert", {"index", "object"}, 2);
       int64_t i = list_index(self, b.get_int(0, 0), true);
       check_list_growth(r, self.list().items.size() + 1);
       r.note_mutation(self, b.get(1));
       self.list().account(1);
       auto& items = self.list().items;
       items.insert(items.begin() + i, b.get(1));
       return Value::none();
     }},
    {"pop",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs b(a, "pop", {"index"});
       auto& items = self.list().items;
       int64_t i = list_index(self, b.get_int(0, -1), false);
       Value v = std::move(items[static_cast<size_t>(i)]);
       items.erase(items.begin() + i);
       return v;
     }},
    {"remove",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs b(a, "remove", {"value"}, 1);
       charge_work(self.list().items.size());  // a linear scan
       auto& items = self.list().items;
       for (size_t i = 0; i < items.size(); ++i) {
         if (equals(items[i], b.get(0))) {
           items.erase(items.begin() + static_cast<std::ptrdiff_t>(i));
           return Value::none();
         }
       }
       fail("list.remove(x): x not in list");
     }},
    {"index",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs b(a, "index", {"value"}, 1);
       charge_work(self.list().items.size());  // a linear scan
       const auto& items = self.list().items;
       for (size_t i = 0; i < items.size(); ++i) {
         if (equals(items[i], b.get(0))) return Value::integer(static_cast<int64_t>(i));
       }
       fail("value is not in list");
     }},
    {"count",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs b(a, "count", {"value"}, 1);
       charge_work(self.list().items.size());  // a linear scan
       int64_t n = 0;
       for (const Value& v : self.list().items) n += equals(v, b.get(0)) ? 1 : 0;
       return Value::integer(n);
     }},
    {"reverse",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs(a, "reverse", {});
       charge_work(self.list().items.size());
       std::reverse(self.list().items.begin(), self.list().items.end());
       return Value::none();
     }},
    {"sort",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs b(a, "sort", {"reverse"});
       bool reverse = b.get_bool(0, false);
       auto& items = self.list().items;
       charge_sort(items.size());
       std::stable_sort(items.begin(), items.end(), [reverse](const Value& x, const Value& y) {
         return reverse ? compare(y, x) < 0 : compare(x, y) < 0;
       });
       return Value::none();
     }},
    {"copy",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs(a, "copy", {});
       return Value::make_list(self.list().items, self.list().is_tuple);
     }},
    {"clear",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs(a, "clear", {});
       self.list().clear();
       return Value::none();
     }},
};

Value dict_items(const Value& self) {
  std::vector<Value> items;
  items.reserve(self.dict().size());
  for (const auto& [k, v] : self.dict().entries) items.push_back(Value::make_list({k, v}, true));
  return Value::make_list(std::move(items));
}

const std::pair<std::string_view, Method> kDictMethods[] = {
    {"get",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs b(a, "get", {"key", "default"}, 1);
       const Value* v = self.dict().find(b.get(0));
       if (v) return *v;
       return b.has(1) ? b.get(1) : Value::none();
     }},
    {"items",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs(a, "items", {});
       return dict_items(self);
     }},
    {"keys",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs(a, "keys", {});
       return Value::make_list(iterate(self));
     }},
    {"values",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs(a, "values", {});
       std::vector<Value> values;
       for (const auto& [k, v] : self.dict().entries) values.push_back(v);
       return Value::make_list(std::move(values));
     }},
    {"pop",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs b(a, "pop", {"key", "default"}, 1);
       const Value* v = self.dict().find(b.get(0));
       if (!v) {
         if (b.has(1)) return b.get(1);
         fail("KeyError: " + to_repr(b.get(0), 256));
       }
       Value out = *v;
       self.dict().erase(b.get(0));
       return out;
     }},
    {"popitem",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs(a, "popitem", {});
       auto& entries = self.dict().entries;
       if (entries.empty()) fail("popitem(): dictionary is empty");
       Value key = entries.back().first;
       Value out = Value::make_list({key, entries.back().second}, true);
       self.dict().erase(key);
       return out;
     }},
    {"setdefault",
     [](Renderer& r, const Value& self, CallArgs& a) {
       BoundArgs b(a, "setdefault", {"key", "default"}, 1);
       if (const Value* v = self.dict().find(b.get(0))) return *v;
       Value fallback = b.has(1) ? b.get(1) : Value::none();
       r.note_mutation(self, fallback);
       self.dict().set(b.get(0), fallback);
       return fallback;
     }},
    {"update",
     [](Renderer& r, const Value& self, CallArgs& a) {
       std::vector<std::pair<Value, Value>> updates;
       if (a.positional.size() > 1) fail("update expected at most 1 argument");
       if (!a.positional.empty()) {
         const Value& other = a.positional[0];
         if (other.is_dict()) {
           updates = other.dict().entries;
         } else {
           for (const Value& pair : iterate(other)) {
             std::vector<Value> kv = iterate(pair);
             if (kv.size() != 2) fail("dictionary update sequence element has wrong length");
             updates.emplace_back(kv[0], kv[1]);
           }
         }
       }
       for (auto& [k, v] : a.keyword) updates.emplace_back(Value::string(k), v);
       for (auto& [k, v] : updates) {
         r.note_mutation(self, v);
         self.dict().set(k, v);
       }
       return Value::none();
     }},
    {"copy",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs(a, "copy", {});
       Value out = Value::make_dict();
       out.dict().account(self.dict().size());
       out.dict().entries = self.dict().entries;
       return out;
     }},
    {"clear",
     [](Renderer&, const Value& self, CallArgs& a) {
       BoundArgs(a, "clear", {});
       self.dict().clear();
       return Value::none();
     }},
};

template <size_t N>
Value bind(const Value& self, std::string_view name,
           const std::pair<std::string_view, Method> (&table)[N]) {
  for (const auto& [n, fn] : table) {
    if (n == name) {
      Method m = fn;
      return Value::function(std::string(name),
                             [self, m](Renderer& r, CallArgs& args) { return m(r, self, args); });
    }
  }
  return Value();
}

}  // namespace

Value get_list_or_dict_method(const Value& self, std::string_view name) {
  if (self.is_list()) {
    if (self.list().is_tuple && name != "count" && name != "index") return Value();
    return bind(self, name, kListMethods);
  }
  if (self.is_dict() && self.dict().flavor == DictFlavor::Plain)
    return bind(self, name, kDictMethods);
  return Value();
}

}  // namespace strata::chat
