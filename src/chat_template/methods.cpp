// Methods of Python str, list and dict objects that templates call (`s.strip()`,
// `d.items()`, `l.append(x)`). Jinja2's ImmutableSandboxedEnvironment forbids the mutating
// list and dict methods; they are allowed here because templates written for llama.cpp
// and vLLM (e.g. Kimi-K2-Thinking's) rely on them.
#include <algorithm>
#include <tuple>

#include "chat_template/budget.h"
#include "chat_template/builtins.h"
#include "chat_template/unicode.h"

namespace strata::chat {

using Method = Value (*)(Renderer&, const Value& self, CallArgs& args);

// ---- str helpers ----------------------------------------------------------------------------

std::pair<size_t, size_t> py_strip_range(std::string_view s, const Value& chars, bool left,
                                         bool right) {
  std::u32string set;
  bool whitespace = chars.is_none();
  if (!whitespace) {
    if (!chars.is_string()) fail("strip arg must be None or str");
    set = utf8::to_u32(chars.str());
  }
  auto strip_it = [&](char32_t c) {
    return whitespace ? utf8::is_space(c) : set.find(c) != std::u32string::npos;
  };
  // Decode only at the two ends: the middle of a long message is copied untouched.
  size_t b = 0, e = s.size();
  while (left && b < e) {
    size_t next = b;
    if (!strip_it(utf8::decode(s, next))) break;
    b = next;
  }
  while (right && e > b) {
    size_t start = e - 1;
    while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80 && e - start < 4)
      --start;
    size_t next = start;
    char32_t c = utf8::decode(s, next);
    if (next != e) {  // not a whole code point: a stray continuation byte
      start = e - 1;
      next = start;
      c = utf8::decode(s, next);
    }
    if (!strip_it(c)) break;
    e = start;
  }
  return {b, e};
}

std::string py_strip(std::string_view s, const Value& chars, bool left, bool right) {
  auto [b, e] = py_strip_range(s, chars, left, right);
  return std::string(s.substr(b, e - b));
}

Value strip_value(const Value& text, const Value& chars, bool left, bool right) {
  const std::string& s = text.str();
  auto [b, e] = py_strip_range(s, chars, left, right);
  if (b == 0 && e == s.size()) return text;  // unchanged: share the text instead of copying it
  return Value::string(s.substr(b, e - b));
}

std::vector<std::string> py_split(std::string_view s, const Value& sep, int64_t maxsplit,
                                  bool from_right) {
  std::vector<std::string> parts;
  // The parts exist twice for a moment (here, then as values): charged as they are made,
  // so that splitting a big string into millions of pieces stops at the memory budget.
  TransientBytes transient;
  auto charge_part = [&transient](size_t bytes) {
    charge_work(kItemUnits + bytes / kBytesPerUnit);
    transient.add(kStringValueBytes + bytes);
  };
  if (sep.is_none()) {
    std::u32string text = utf8::to_u32(s);
    std::vector<std::pair<size_t, size_t>> words;  // [begin, end) in code points
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && utf8::is_space(text[i])) ++i;
      if (i == text.size()) break;
      size_t j = i;
      while (j < text.size() && !utf8::is_space(text[j])) ++j;
      charge_part(0);
      words.emplace_back(i, j);
      i = j;
    }
    // With maxsplit, the unsplit remainder keeps its outer whitespace, as in Python.
    if (maxsplit >= 0 && static_cast<size_t>(maxsplit) < words.size()) {
      if (from_right) {
        size_t first_kept = words.size() - static_cast<size_t>(maxsplit) - 1;
        words[first_kept].first = 0;
        words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(first_kept));
      } else {
        size_t keep = static_cast<size_t>(maxsplit) + 1;
        words[keep - 1].second = text.size();
        words.resize(keep);
      }
    }
    for (auto [b, e] : words)
      parts.push_back(utf8::from_u32(std::u32string_view(text).substr(b, e - b)));
    return parts;
  }
  if (!sep.is_string()) fail("must be str or None, not " + type_name(sep));
  const std::string& d = sep.str();
  if (d.empty()) fail("empty separator");
  if (!from_right) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      size_t hit = s.find(d, start);
      if (hit == std::string_view::npos) break;
      charge_part(hit - start);
      parts.emplace_back(s.substr(start, hit - start));
      start = hit + d.size();
    }
    parts.emplace_back(s.substr(start));
    return parts;
  }
  size_t end = s.size();
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    if (end < d.size()) break;
    size_t hit = s.rfind(d, end - d.size());
    if (hit == std::string_view::npos) break;
    charge_part(end - hit - d.size());
    parts.emplace_back(s.substr(hit + d.size(), end - hit - d.size()));
    end = hit;
  }
  parts.emplace_back(s.substr(0, end));
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::string py_title(std::string_view s) {
  std::string out;
  bool previous_cased = false;
  for (size_t i = 0; i < s.size();) {
    char32_t c = utf8::decode(s, i);
    if (utf8::is_upper(c)) {
      utf8::append(out, previous_cased ? utf8::to_lower(c) : c);
      previous_cased = true;
    } else if (utf8::is_lower(c)) {
      utf8::append(out, previous_cased ? c : utf8::to_upper(c));
      previous_cased = true;
    } else {
      utf8::append(out, c);
      previous_cased = false;
    }
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (size_t i = 0; i < s.size();) {
    char32_t c = utf8::decode(s, i);
    utf8::append(out, first ? utf8::to_upper(c) : utf8::to_lower(c));
    first = false;
  }
  return out;
}

std::string py_replace(Renderer& r, std::string_view s, std::string_view old, std::string_view with,
                       int64_t count) {
  std::string out;
  size_t start = 0;
  int64_t done = 0;
  if (old.empty()) {  // Python inserts `with` between characters, and at both ends
    for (size_t i = 0; i <= s.size() && (count < 0 || done < count);) {
      r.check_text_size(out.size() + with.size() + s.size());
      out += with;
      ++done;
      if (i == s.size()) {
        start = i;
        break;
      }
      size_t j = i;
      utf8::decode(s, j);
      out += s.substr(i, j - i);
      i = j;
      start = i;
    }
    return out + std::string(s.substr(start));
  }
  while (count < 0 || done < count) {
    size_t hit = s.find(old, start);
    if (hit == std::string_view::npos) break;
    out += s.substr(start, hit - start);
    out += with;
    r.check_text_size(out.size());
    start = hit + old.size();
    ++done;
  }
  out += s.substr(start);
  r.check_text_size(out.size());
  charge_work(static_cast<uint64_t>(done) * kItemUnits);  // each hit is a search and two appends
  return out;
}

namespace {

const std::string& self_str(const Value& self) {
  return self.str();
}

Value str_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (std::string& p : parts) items.push_back(Value::string(std::move(p)));
  return Value::make_list(std::move(items));
}

// Code-point range [start, end) of a str method's optional start/end arguments.
std::pair<size_t, size_t> sub_range(const BoundArgs& a, size_t first, size_t n) {
  auto norm = [n](int64_t i) {
    if (i < 0) i += static_cast<int64_t>(n);
    return static_cast<size_t>(std::clamp<int64_t>(i, 0, static_cast<int64_t>(n)));
  };
  size_t b = norm(a.get_int(first, 0));
  size_t e = norm(a.get_int(first + 1, static_cast<int64_t>(n)));
  return {b, e};
}

Value find_impl(const Value& self, CallArgs& args, const char* name, bool from_right,
                bool count_all) {
  BoundArgs a(args, name, {"sub", "start", "end"}, 1);
  if (!a.get(0).is_string())
    fail(std::string(name) + "() argument must be str, not " + type_name(a.get(0)));
  if (!a.has(1) && !a.has(2) && !a.get(0).str().empty()) {
    // Fast path on bytes; a match of valid UTF-8 always starts on a code point boundary.
    const std::string& text = self_str(self);
    const std::string& sub = a.get(0).str();
    if (count_all) {
      int64_t n = 0;
      for (size_t p = text.find(sub); p != std::string::npos; p = text.find(sub, p + sub.size()))
        ++n;
      return Value::integer(n);
    }
    size_t p = from_right ? text.rfind(sub) : text.find(sub);
    if (p == std::string::npos) return Value::integer(-1);
    return Value::integer(static_cast<int64_t>(utf8::length(std::string_view(text).substr(0, p))));
  }
  std::u32string text = utf8::to_u32(self_str(self));
  std::u32string sub = utf8::to_u32(a.get(0).str());
  auto [b, e] = sub_range(a, 1, text.size());
  if (b > e || e - b < sub.size()) return Value::integer(count_all ? 0 : -1);
  std::u32string_view window = std::u32string_view(text).substr(b, e - b);
  if (count_all) {
    if (sub.empty()) return Value::integer(static_cast<int64_t>(window.size()) + 1);
    int64_t n = 0;
    for (size_t p = window.find(sub); p != std::u32string_view::npos;
         p = window.find(sub, p + sub.size()))
      ++n;
    return Value::integer(n);
  }
  size_t p = from_right ? window.rfind(sub) : window.find(sub);
  return Value::integer(p == std::u32string_view::npos ? -1 : static_cast<int64_t>(p + b));
}

Value affix_test(const Value& self, CallArgs& args, bool suffix) {
  const char* name = suffix ? "endswith" : "startswith";
  BoundArgs a(args, name, {"prefix", "start", "end"}, 1);
  // Without start/end, comparing UTF-8 bytes is comparing code points.
  std::u32string text;
  std::string_view bytes = self_str(self);
  bool by_code_point = a.has(1) || a.has(2);
  size_t b = 0, e = 0;
  if (by_code_point) {
    text = utf8::to_u32(bytes);
    std::tie(b, e) = sub_range(a, 1, text.size());
  }
  auto matches = [&](const Value& v) {
    if (!v.is_string())
      fail(std::string(name) + " first arg must be str or a tuple of str, not " + type_name(v));
    if (!by_code_point) {
      const std::string& p = v.str();
      if (p.size() > bytes.size()) return false;
      return suffix ? bytes.substr(bytes.size() - p.size()) == p : bytes.substr(0, p.size()) == p;
    }
    std::u32string_view window =
        b <= e ? std::u32string_view(text).substr(b, e - b) : std::u32string_view();
    std::u32string p = utf8::to_u32(v.str());
    if (p.size() > window.size()) return false;
    return suffix ? window.substr(window.size() - p.size()) == p : window.substr(0, p.size()) == p;
  };
  const Value& pattern = a.get(0);
  if (pattern.is_list()) {
    for (const Value& v : pattern.list().items) {
      if (matches(v)) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  return Value::boolean(matches(pattern));
}

Value pad(Renderer& r, const Value& self, CallArgs& args, const char* name, int align) {
  BoundArgs a(args, name, {"width", "fillchar"}, 1);
  int64_t width = a.get_int(0, 0);
  std::string fill = a.get_string(1, " ");
  if (utf8::length(fill) != 1) fail("the fill character must be exactly one character long");
  int64_t len = static_cast<int64_t>(utf8::length(self_str(self)));
  if (width <= len) return self;
  r.check_text_size(static_cast<size_t>(width) * fill.size());
  int64_t total = width - len;
  int64_t left = align < 0 ? 0 : (align > 0 ? total : total / 2 + (total & width & 1));
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += self_str(self);
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return Value::string(std::move(out));
}

template <bool (*Pred)(char32_t)>
Value all_chars(const Value& self) {
  const std::string& s = self_str(self);
  if (s.empty()) return Value::boolean(false);
  for (size_t i = 0; i < s.size();) {
    if (!Pred(utf8::decode(s, i))) return Value::boolean(false);
  }
  return Value::boolean(true);
}

bool is_alnum(char32_t c) {
  return utf8::is_alpha(c) || utf8::is_digit(c);
}

Value cased_test(const Value& self, bool want_upper) {
  bool any_cased = false;
  const std::string& s = self_str(self);
  for (size_t i = 0; i < s.size();) {
    char32_t c = utf8::decode(s, i);
    if (want_upper ? utf8::is_lower(c) : utf8::is_upper(c)) return Value::boolean(false);
    if (utf8::is_lower(c) || utf8::is_upper(c)) any_cased = true;
  }
  return Value::boolean(any_cased);
}

Value partition(const Value& self, CallArgs& args, bool from_right) {
  BoundArgs a(args, from_right ? "rpartition" : "partition", {"sep"}, 1);
  std::string sep = a.get_string(0, "");
  if (sep.empty()) fail("empty separator");
  const std::string& s = self_str(self);
  size_t hit = from_right ? s.rfind(sep) : s.find(sep);
  if (hit == std::string::npos) {
    std::vector<Value> parts = from_right
                                   ? std::vector<Value>{Value::string(""), Value::string(""), self}
                                   : std::vector<Value>{self, Value::string(""), Value::string("")};
    return Value::make_list(std::move(parts), true);
  }
  return Value::make_list({Value::string(s.substr(0, hit)), Value::string(sep),
                           Value::string(s.substr(hit + sep.size()))},
                          true);
}

const std::pair<std::string_view, Method> kStrMethods[] = {
    {"upper", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "upper", {}); return Value::string(utf8::upper(s.str())); }},
    {"lower", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "lower", {}); return Value::string(utf8::lower(s.str())); }},
    {"casefold", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "casefold", {}); return Value::string(utf8::lower(s.str())); }},
    {"title", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "title", {}); return Value::string(py_title(s.str())); }},
    {"capitalize", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "capitalize", {}); return Value::string(py_capitalize(s.str())); }},
    {"swapcase", [](Renderer&, const Value& s, CallArgs& a) {
       BoundArgs(a, "swapcase", {});
       std::string out;
       for (size_t i = 0; i < s.str().size();) {
         char32_t c = utf8::decode(s.str(), i);
         utf8::append(out, utf8::is_upper(c) ? utf8::to_lower(c) : utf8::to_upper(c));
       }
       return Value::string(std::move(out));
     }},
    {"strip", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs b(a, "strip", {"chars"}); return strip_value(s, b.get_or_none(0), true, true); }},
    {"lstrip", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs b(a, "lstrip", {"chars"}); return strip_value(s, b.get_or_none(0), true, false); }},
    {"rstrip", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs b(a, "rstrip", {"chars"}); return strip_value(s, b.get_or_none(0), false, true); }},
    {"split", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs b(a, "split", {"sep", "maxsplit"}); return str_list(py_split(s.str(), b.get_or_none(0), b.get_int(1, -1), false)); }},
    {"rsplit", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs b(a, "rsplit", {"sep", "maxsplit"}); return str_list(py_split(s.str(), b.get_or_none(0), b.get_int(1, -1), true)); }},
    {"splitlines", [](Renderer&, const Value& s, CallArgs& a) {
       BoundArgs b(a, "splitlines", {"keepends"});
       bool keep = b.get_bool(0, false);
       std::vector<std::string> lines;
       const std::string& t = s.str();
       size_t start = 0;
       for (size_t i = 0; i < t.size();) {
         size_t at = i;
         char32_t c = utf8::decode(t, i);
         bool is_break = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                         c == 0x85 || c == 0x2028 || c == 0x2029;
         if (!is_break) continue;
         if (c == '\r' && i < t.size() && t[i] == '\n') ++i;
         lines.push_back(t.substr(start, (keep ? i : at) - start));
         start = i;
       }
       if (start < t.size()) lines.push_back(t.substr(start));
       return str_list(std::move(lines));
     }},
    {"startswith", [](Renderer&, const Value& s, CallArgs& a) { return affix_test(s, a, false); }},
    {"endswith", [](Renderer&, const Value& s, CallArgs& a) { return affix_test(s, a, true); }},
    {"find", [](Renderer&, const Value& s, CallArgs& a) { return find_impl(s, a, "find", false, false); }},
    {"rfind", [](Renderer&, const Value& s, CallArgs& a) { return find_impl(s, a, "rfind", true, false); }},
    {"index", [](Renderer&, const Value& s, CallArgs& a) {
       Value v = find_impl(s, a, "index", false, false);
       if (v.as_int() < 0) fail("substring not found");
       return v;
     }},
    {"rindex", [](Renderer&, const Value& s, CallArgs& a) {
       Value v = find_impl(s, a, "rindex", true, false);
       if (v.as_int() < 0) fail("substring not found");
       return v;
     }},
    {"count", [](Renderer&, const Value& s, CallArgs& a) { return find_impl(s, a, "count", false, true); }},
    {"replace", [](Renderer& r, const Value& s, CallArgs& a) {
       BoundArgs b(a, "replace", {"old", "new", "count"}, 2);
       return Value::string(py_replace(r, s.str(), b.get_string(0, ""), b.get_string(1, ""), b.get_int(2, -1)));
     }},
    {"join", [](Renderer& r, const Value& s, CallArgs& a) {
       BoundArgs b(a, "join", {"iterable"}, 1);
       std::string out;
       size_t i = 0;
       for (const Value& v : iterate(b.get(0))) {
         if (!v.is_string()) fail("sequence item " + std::to_string(i) + ": expected str instance, " + type_name(v) + " found");
         if (i++) out += s.str();
         out += v.str();
         r.check_text_size(out.size());
       }
       return Value::string(std::move(out));
     }},
    {"format", [](Renderer& r, const Value& s, CallArgs& a) { return Value::string(str_format(r, s.str(), a)); }},
    {"center", [](Renderer& r, const Value& s, CallArgs& a) { return pad(r, s, a, "center", 0); }},
    {"ljust", [](Renderer& r, const Value& s, CallArgs& a) { return pad(r, s, a, "ljust", -1); }},
    {"rjust", [](Renderer& r, const Value& s, CallArgs& a) { return pad(r, s, a, "rjust", 1); }},
    {"zfill", [](Renderer& r, const Value& s, CallArgs& a) {
       BoundArgs b(a, "zfill", {"width"}, 1);
       int64_t width = b.get_int(0, 0);
       std::string t = s.str();
       int64_t len = static_cast<int64_t>(utf8::length(t));
       if (width <= len) return s;
       r.check_text_size(static_cast<size_t>(width));
       size_t sign = (!t.empty() && (t[0] == '+' || t[0] == '-')) ? 1 : 0;
       t.insert(sign, static_cast<size_t>(width - len), '0');
       return Value::string(std::move(t));
     }},
    {"isalpha", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "isalpha", {}); return all_chars<utf8::is_alpha>(s); }},
    {"isdigit", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "isdigit", {}); return all_chars<utf8::is_digit>(s); }},
    {"isdecimal", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "isdecimal", {}); return all_chars<utf8::is_digit>(s); }},
    {"isnumeric", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "isnumeric", {}); return all_chars<utf8::is_digit>(s); }},
    {"isalnum", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "isalnum", {}); return all_chars<is_alnum>(s); }},
    {"isspace", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "isspace", {}); return all_chars<utf8::is_space>(s); }},
    {"isupper", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "isupper", {}); return cased_test(s, true); }},
    {"islower", [](Renderer&, const Value& s, CallArgs& a) { BoundArgs(a, "islower", {}); return cased_test(s, false); }},
    {"istitle", [](Renderer&, const Value& s, CallArgs& a) {
       BoundArgs(a, "istitle", {});
       bool any_cased = false, previous_cased = false;
       for (size_t i = 0; i < s.str().size();) {
         char32_t c = utf8::decode(s.str(), i);
         bool upper = utf8::is_upper(c), lower = utf8::is_lower(c);
         if ((upper && previous_cased) || (lower && !previous_cased)) return Value::boolean(false);
         previous_cased = upper || lower;
         any_cased = any_cased || previous_cased;
       }
       return Value::boolean(any_cased);
     }},
    {"partition", [](Renderer&, const Value& s, CallArgs& a) { return partition(s, a, false); }},
    {"rpartition", [](Renderer&, const Value& s, CallArgs& a) { return partition(s, a, true); }},
    {"removeprefix", [](Renderer&, const Value& s, CallArgs& a) {
       BoundArgs b(a, "removeprefix", {"prefix"}, 1);
       std::string p = b.get_string(0, "");
       return s.str().rfind(p, 0) == 0 ? Value::string(s.str().substr(p.size())) : s;
     }},
    {"removesuffix", [](Renderer&, const Value& s, CallArgs& a) {
       BoundArgs b(a, "removesuffix", {"suffix"}, 1);
       std::string p = b.get_string(0, "");
       const std::string& t = s.str();
       bool ends = !p.empty() && t.size() >= p.size() && t.compare(t.size() - p.size(), p.size(), p) == 0;
       return ends ? Value::string(t.substr(0, t.size() - p.size())) : s;
     }},
};

}  // namespace

Value get_list_or_dict_method(const Value& self, std::string_view name);

Value get_method(const Value& self, std::string_view name) {
  if (self.is_string()) {
    for (const auto& [n, fn] : kStrMethods) {
      if (n == name) {
        Method m = fn;
        return Value::function(std::string(name),
                               [self, m](Renderer& r, CallArgs& args) { return m(r, self, args); });
      }
    }
    return Value();
  }
  return get_list_or_dict_method(self, name);
}

}  // namespace strata::chat
