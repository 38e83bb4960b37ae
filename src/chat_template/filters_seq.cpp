// Jinja2's built-in filters on sequences and mappings: length, join, map, select, sort, ...
#include <algorithm>

#include "chat_template/budget.h"
#include "chat_template/builtins.h"
#include "chat_template/unicode.h"

namespace strata::chat {

namespace {

// Jinja2's make_attrgetter: "a.b.0" looks up item a, then b, then index 0.
Value get_path(Renderer& r, const Value& item, const Value& attribute) {
  if (attribute.is_integral()) return r.get_item(item, attribute);
  if (!attribute.is_string()) fail("attribute must be a string or an integer");
  Value current = item;
  for (const std::string& part : py_split(attribute.str(), Value::string("."), -1, false)) {
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(),
                                                [](char c) { return c >= '0' && c <= '9'; });
    Value key = Value::string(part);
    if (numeric && part.size() < 18) key = Value::integer(std::stoll(part));
    current = r.get_item(current, key);
  }
  return current;
}

// Sort key of Jinja2's filters: strings compare case-insensitively unless asked otherwise.
Value fold_case(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(utf8::lower(v.str()));
  return v;
}

std::vector<Value> keys_for(Renderer& r, const std::vector<Value>& items, const Value& attribute,
                            bool case_sensitive) {
  std::vector<Value> keys;
  keys.reserve(items.size());
  for (const Value& item : items) {
    Value key =
        attribute.is_undefined() || attribute.is_none() ? item : get_path(r, item, attribute);
    keys.push_back(fold_case(key, case_sensitive));
  }
  return keys;
}

Value length_of(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
      return Value::integer(0);
    case Kind::String:
      return Value::integer(static_cast<int64_t>(utf8::length(v.str())));
    case Kind::List:
      return Value::integer(static_cast<int64_t>(v.list().items.size()));
    case Kind::Dict:
      return Value::integer(static_cast<int64_t>(v.dict().size()));
    default:
      fail("object of type '" + type_name(v) + "' has no len()");
  }
}

Value filter_join(Renderer& r, Value& v, CallArgs& args) {
  BoundArgs b(args, "join", {"d", "attribute"});
  std::string sep = b.has(0) ? to_str(b.get(0)) : "";
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    Value x = b.has(1) && !b.get(1).is_none() ? get_path(r, item, b.get(1)) : item;
    if (!first) out += sep;
    first = false;
    charge_work(kItemUnits);
    out += to_str(x, r.limits().max_output_bytes);
    r.check_text_size(out.size());
  }
  return Value::string(std::move(out));
}

Value filter_sort(Renderer& r, Value& v, CallArgs& args) {
  BoundArgs b(args, "sort", {"reverse", "case_sensitive", "attribute"});
  bool reverse = b.get_bool(0, false);
  std::vector<Value> items = iterate(v);
  std::vector<Value> keys = keys_for(r, items, b.get(2), b.get_bool(1, false));
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  charge_sort(order.size());
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return reverse ? compare(keys[y], keys[x]) < 0 : compare(keys[x], keys[y]) < 0;
  });
  std::vector<Value> sorted;
  sorted.reserve(items.size());
  for (size_t i : order) sorted.push_back(items[i]);
  return Value::make_list(std::move(sorted));
}

Value filter_dictsort(Renderer&, Value& v, CallArgs& args) {
  BoundArgs b(args, "dictsort", {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) fail("dictsort filter expects a mapping, got " + type_name(v));
  bool case_sensitive = b.get_bool(0, false);
  std::string by = b.get_string(1, "key");
  if (by != "key" && by != "value") fail("You can only sort by either 'key' or 'value'");
  bool reverse = b.get_bool(2, false);
  std::vector<std::pair<Value, Value>> entries = v.dict().entries;
  charge_sort(entries.size());
  std::stable_sort(entries.begin(), entries.end(), [&](const auto& x, const auto& y) {
    Value kx = fold_case(by == "key" ? x.first : x.second, case_sensitive);
    Value ky = fold_case(by == "key" ? y.first : y.second, case_sensitive);
    return reverse ? compare(ky, kx) < 0 : compare(kx, ky) < 0;
  });
  std::vector<Value> out;
  for (auto& [k, val] : entries) out.push_back(Value::make_list({k, val}, true));
  return Value::make_list(std::move(out));
}

Value filter_min_max(Renderer& r, Value& v, CallArgs& args, bool want_max) {
  BoundArgs b(args, want_max ? "max" : "min", {"case_sensitive", "attribute"});
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("no aggregated item, sequence was empty");
  std::vector<Value> keys = keys_for(r, items, b.get(1), b.get_bool(0, false));
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    int c = compare(keys[i], keys[best]);
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}

Value filter_unique(Renderer& r, Value& v, CallArgs& args) {
  BoundArgs b(args, "unique", {"case_sensitive", "attribute"});
  std::vector<Value> items = iterate(v);
  std::vector<Value> keys = keys_for(r, items, b.get(1), b.get_bool(0, false));
  Value seen = Value::make_dict();
  std::vector<Value> out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (seen.dict().find(keys[i])) continue;
    seen.dict().set(keys[i], Value::none());
    out.push_back(items[i]);
  }
  return Value::make_list(std::move(out));
}

Value filter_sum(Renderer& r, Value& v, CallArgs& args) {
  BoundArgs b(args, "sum", {"attribute", "start"});
  Value total = b.has(1) ? b.get(1) : Value::integer(0);
  for (const Value& item : iterate(v)) {
    Value x = b.has(0) && !b.get(0).is_none() ? get_path(r, item, b.get(0)) : item;
    total = binary_op(r, BinaryOp::Add, std::move(total), x);
  }
  return total;
}

Value filter_map(Renderer& r, Value& v, CallArgs& args) {
  std::vector<Value> items = iterate(v);
  std::vector<Value> out;
  out.reserve(items.size());
  if (args.positional.empty()) {
    BoundArgs b(args, "map", {"attribute", "default"}, 1);
    for (const Value& item : items) {
      Value x = get_path(r, item, b.get(0));
      if (x.is_undefined() && b.has(1)) x = b.get(1);
      out.push_back(std::move(x));
    }
    return Value::make_list(std::move(out));
  }
  if (!args.positional[0].is_string()) fail("map requires a filter name or attribute=");
  std::string name = args.positional[0].str();
  for (const Value& item : items) {
    charge_work(kStepUnits);  // a filter call per item, as if written out
    CallArgs rest{{args.positional.begin() + 1, args.positional.end()}, args.keyword};
    out.push_back(apply_filter(r, name, item, rest));
  }
  return Value::make_list(std::move(out));
}

// select/reject (attribute == nullptr) and selectattr/rejectattr.
Value filter_select(Renderer& r, Value& v, CallArgs& args, bool keep_matches, bool by_attribute) {
  const char* name = by_attribute ? (keep_matches ? "selectattr" : "rejectattr")
                                  : (keep_matches ? "select" : "reject");
  if (!args.keyword.empty()) fail(std::string(name) + "() takes no keyword arguments");
  size_t next = 0;
  Value attribute;
  if (by_attribute) {
    if (args.positional.empty())
      fail(std::string(name) + "() missing required argument 'attribute'");
    attribute = args.positional[next++];
  }
  std::string test;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string())
      fail(std::string(name) + "() test name must be a string");
    test = args.positional[next++].str();
  }
  std::vector<Value> out;
  for (const Value& item : iterate(v)) {
    charge_work(kStepUnits);  // a test call per item, as if written out
    Value x = by_attribute ? get_path(r, item, attribute) : item;
    bool matched;
    if (test.empty()) {
      matched = truthy(x);
    } else {
      CallArgs test_args{
          {args.positional.begin() + static_cast<std::ptrdiff_t>(next), args.positional.end()}, {}};
      matched = apply_test(r, test, x, test_args);
    }
    if (matched == keep_matches) out.push_back(item);
  }
  return Value::make_list(std::move(out));
}

Value filter_batch(Renderer&, Value& v, CallArgs& args) {
  BoundArgs b(args, "batch", {"linecount", "fill_with"}, 1);
  int64_t size = b.get_int(0, 1);
  if (size <= 0) fail("batch size must be positive");
  std::vector<Value> out, current;
  for (const Value& item : iterate(v)) {
    current.push_back(item);
    if (static_cast<int64_t>(current.size()) == size)
      out.push_back(Value::make_list(std::exchange(current, {})));
  }
  if (!current.empty()) {
    if (b.has(1)) {
      while (static_cast<int64_t>(current.size()) < size) current.push_back(b.get(1));
    }
    out.push_back(Value::make_list(std::move(current)));
  }
  return Value::make_list(std::move(out));
}

Value filter_slice(Renderer&, Value& v, CallArgs& args) {
  BoundArgs b(args, "slice", {"slices", "fill_with"}, 1);
  int64_t slices = b.get_int(0, 1);
  if (slices <= 0 || slices > 1'000'000) fail("slice count must be between 1 and 1000000");
  std::vector<Value> items = iterate(v);
  size_t n = static_cast<size_t>(slices);
  size_t per = items.size() / n, extra = items.size() % n;
  std::vector<Value> out;
  for (size_t i = 0; i < n; ++i) {
    size_t start = i * per + std::min(i, extra);
    size_t end = start + per + (i < extra ? 1 : 0);
    std::vector<Value> part(items.begin() + static_cast<std::ptrdiff_t>(start),
                            items.begin() + static_cast<std::ptrdiff_t>(end));
    if (b.has(1) && !b.get(1).is_none() && i >= extra) part.push_back(b.get(1));
    out.push_back(Value::make_list(std::move(part)));
  }
  return Value::make_list(std::move(out));
}

Value filter_groupby(Renderer& r, Value& v, CallArgs& args) {
  BoundArgs b(args, "groupby", {"attribute", "default", "case_sensitive"}, 1);
  std::vector<Value> items = iterate(v);
  std::vector<Value> raw_keys;
  for (const Value& item : items) {
    Value key = get_path(r, item, b.get(0));
    if (key.is_undefined() && b.has(1)) key = b.get(1);
    raw_keys.push_back(key);
  }
  bool case_sensitive = b.get_bool(2, false);
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  charge_sort(order.size());
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return compare(fold_case(raw_keys[x], case_sensitive), fold_case(raw_keys[y], case_sensitive)) <
           0;
  });
  std::vector<Value> groups;
  for (size_t k = 0; k < order.size();) {
    Value key = fold_case(raw_keys[order[k]], case_sensitive);
    std::vector<Value> members;
    size_t j = k;
    while (j < order.size() && equals(fold_case(raw_keys[order[j]], case_sensitive), key)) {
      members.push_back(items[order[j]]);
      ++j;
    }
    groups.push_back(
        Value::make_list({raw_keys[order[k]], Value::make_list(std::move(members))}, true));
    k = j;
  }
  return Value::make_list(std::move(groups));
}

Value filter_length(Renderer&, Value& v, CallArgs& args) {
  BoundArgs(args, "length", {});
  return length_of(v);
}

Value filter_first_last(Value& v, CallArgs& args, bool first) {
  const char* name = first ? "first" : "last";
  BoundArgs(args, name, {});
  std::vector<Value> items = iterate(v);
  if (items.empty())
    return Value::undefined(std::string("no ") + name + " item, sequence was empty");
  return first ? items.front() : items.back();
}

Value filter_reverse(Renderer&, Value& v, CallArgs& args) {
  BoundArgs(args, "reverse", {});
  if (v.is_string()) {
    std::u32string s = utf8::to_u32(v.str());
    std::reverse(s.begin(), s.end());
    return Value::string(utf8::from_u32(s));
  }
  std::vector<Value> items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::make_list(std::move(items));
}

Value filter_items(Renderer&, Value& v, CallArgs& args) {
  BoundArgs(args, "items", {});
  if (v.is_undefined()) return Value::make_list();
  if (!v.is_dict()) fail("can only get item pairs from a mapping");
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict().entries) out.push_back(Value::make_list({k, val}, true));
  return Value::make_list(std::move(out));
}

using SeqFilter = Value (*)(Renderer&, Value&, CallArgs&);

const std::pair<std::string_view, SeqFilter> kSeqFilters[] = {
    {"length", filter_length},
    {"count", filter_length},
    {"first", [](Renderer&, Value& v, CallArgs& a) { return filter_first_last(v, a, true); }},
    {"last", [](Renderer&, Value& v, CallArgs& a) { return filter_first_last(v, a, false); }},
    {"list",
     [](Renderer&, Value& v, CallArgs& a) {
       BoundArgs(a, "list", {});
       return Value::make_list(iterate(v));
     }},
    {"reverse", filter_reverse},
    {"items", filter_items},
    {"join", filter_join},
    {"sort", filter_sort},
    {"dictsort", filter_dictsort},
    {"min", [](Renderer& r, Value& v, CallArgs& a) { return filter_min_max(r, v, a, false); }},
    {"max", [](Renderer& r, Value& v, CallArgs& a) { return filter_min_max(r, v, a, true); }},
    {"unique", filter_unique},
    {"sum", filter_sum},
    {"map", filter_map},
    {"select",
     [](Renderer& r, Value& v, CallArgs& a) { return filter_select(r, v, a, true, false); }},
    {"reject",
     [](Renderer& r, Value& v, CallArgs& a) { return filter_select(r, v, a, false, false); }},
    {"selectattr",
     [](Renderer& r, Value& v, CallArgs& a) { return filter_select(r, v, a, true, true); }},
    {"rejectattr",
     [](Renderer& r, Value& v, CallArgs& a) { return filter_select(r, v, a, false, true); }},
    {"batch", filter_batch},
    {"slice", filter_slice},
    {"groupby", filter_groupby},
};

}  // namespace

bool has_seq_filter(std::string_view name) {
  for (const auto& [n, fn] : kSeqFilters) {
    if (n == name) return true;
  }
  return false;
}

Value apply_seq_filter(Renderer& r, std::string_view name, Value& v, CallArgs& args,
                       bool& handled) {
  for (const auto& [n, fn] : kSeqFilters) {
    if (n == name) {
      handled = true;
      return fn(r, v, args);
    }
  }
  handled = false;
  return Value();
}

}  // namespace strata::chat
