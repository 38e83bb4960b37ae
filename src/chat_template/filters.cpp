// Jinja2's built-in filters on strings and numbers, plus transformers' tojson. Filters on
// sequences live in filters_seq.cpp.
#include <cfenv>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "chat_template/builtins.h"
#include "chat_template/unicode.h"
#include "core/html_escape.h"

namespace strata::chat {

namespace {

using Filter = Value (*)(Renderer&, Value&, CallArgs&);

// Jinja2's soft_str: undefined renders as "".
std::string text_of(Renderer& r, const Value& v) {
  return to_str(v, r.limits().max_output_bytes);
}

// Jinja2's `title` filter capitalises the first letter after spaces, brackets and dashes
// (unlike Python's str.title, which also does so after apostrophes and digits).
std::string jinja_title(std::string_view s) {
  std::string out;
  bool word_start = true;
  for (size_t i = 0; i < s.size();) {
    char32_t c = utf8::decode(s, i);
    bool separator = utf8::is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    utf8::append(out, separator ? c : (word_start ? utf8::to_upper(c) : utf8::to_lower(c)));
    word_start = separator;
  }
  return out;
}

// Python int(str): optional sign, digits with single underscores, surrounding whitespace.
std::optional<int64_t> parse_python_int(std::string s, int base) {
  s = py_strip(s, Value::none(), true, true);
  std::string digits;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) digits.push_back(s[i++]);
  if (base == 16 && s.size() > i + 1 && s[i] == '0' && (s[i + 1] | 0x20) == 'x') i += 2;
  bool last_digit = false;
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && last_digit && i + 1 < s.size() && s[i + 1] != '_') {
      last_digit = false;
      continue;
    }
    digits.push_back(s[i]);
    last_digit = true;
  }
  if (digits.empty() || digits == "+" || digits == "-") return std::nullopt;
  int64_t value = 0;
  const char* begin = digits.data() + (digits[0] == '+' ? 1 : 0);
  auto res = std::from_chars(begin, digits.data() + digits.size(), value, base);
  if (res.ec != std::errc() || res.ptr != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_python_float(const std::string& text) {
  std::string s = py_strip(text, Value::none(), true, true);
  std::string lower = utf8::lower(s);
  std::string_view body = lower;
  double sign = 1;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    sign = body[0] == '-' ? -1 : 1;
    body.remove_prefix(1);
  }
  if (body == "inf" || body == "infinity") return sign * std::numeric_limits<double>::infinity();
  if (body == "nan") return std::numeric_limits<double>::quiet_NaN();
  std::string clean;
  for (char c : s) {
    if (c != '_') clean.push_back(c);
  }
  if (clean.empty()) return std::nullopt;
  const char* begin = clean.data() + (clean[0] == '+' ? 1 : 0);
  double value = 0;
  auto res = std::from_chars(begin, clean.data() + clean.size(), value);
  if (res.ec != std::errc() || res.ptr != clean.data() + clean.size()) return std::nullopt;
  return value;
}

Value filter_int(Renderer&, Value& v, CallArgs& args) {
  BoundArgs b(args, "int", {"default", "base"});
  Value fallback = b.has(0) ? b.get(0) : Value::integer(0);
  int64_t base = b.get_int(1, 10);
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.is_float()) {
    double d = v.as_double();
    if (std::isnan(d) || std::isinf(d) || std::fabs(d) >= 9.2e18)
      fail("cannot convert float to integer");
    return Value::integer(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    if (base == 10 || base == 16 || base == 8 || base == 2) {
      if (auto i = parse_python_int(v.str(), static_cast<int>(base))) return Value::integer(*i);
    }
    if (auto d = parse_python_float(v.str())) {
      if (!std::isnan(*d) && !std::isinf(*d) && std::fabs(*d) < 9.2e18)
        return Value::integer(static_cast<int64_t>(*d));
    }
  }
  return fallback;
}

Value filter_float(Renderer&, Value& v, CallArgs& args) {
  BoundArgs b(args, "float", {"default"});
  Value fallback = b.has(0) ? b.get(0) : Value::number(0.0);
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_number()) return Value::number(v.as_double());
  if (v.is_string()) {
    if (auto d = parse_python_float(v.str())) return Value::number(*d);
  }
  return fallback;
}

Value filter_round(Renderer&, Value& v, CallArgs& args) {
  BoundArgs b(args, "round", {"precision", "method"});
  int64_t precision = b.get_int(0, 0);
  std::string method = b.get_string(1, "common");
  if (method != "common" && method != "ceil" && method != "floor") {
    fail("method must be 'common', 'ceil' or 'floor'");
  }
  if (!v.is_number()) fail("type " + type_name(v) + " doesn't define __round__ method");
  if (method == "common" && v.is_integral() && precision >= 0) return Value::integer(v.as_int());
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_double() * scale;
  double rounded;
  if (method == "ceil") {
    rounded = std::ceil(x);
  } else if (method == "floor") {
    rounded = std::floor(x);
  } else {
    rounded = std::nearbyint(x);  // round half to even, like Python's round()
  }
  return Value::number(rounded / scale);
}

Value filter_indent(Renderer& r, Value& v, CallArgs& args) {
  BoundArgs b(args, "indent", {"width", "first", "blank"});
  std::string indent = "    ";
  if (b.has(0)) {
    const Value& w = b.get(0);
    if (w.is_string()) {
      indent = w.str();
    } else {
      int64_t n = b.get_int(0, 4);
      r.check_text_size(static_cast<size_t>(std::max<int64_t>(n, 0)));
      indent.assign(static_cast<size_t>(std::max<int64_t>(n, 0)), ' ');
    }
  }
  bool first = b.get_bool(1, false), blank = b.get_bool(2, false);
  std::string s = text_of(r, v) + "\n";
  // Python's splitlines() on s, which now ends with a newline.
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.push_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
      if (blank || !lines[i].empty()) out += indent;
    }
    out += lines[i];
    r.check_text_size(out.size());
  }
  if (first) out = indent + out;
  return Value::string(std::move(out));
}

Value filter_truncate(Renderer& r, Value& v, CallArgs& args) {
  BoundArgs b(args, "truncate", {"length", "killwords", "end", "leeway"});
  int64_t length = b.get_int(0, 255);
  bool killwords = b.get_bool(1, false);
  std::string end = b.get_string(2, "...");
  int64_t leeway = b.get_int(3, 5);
  std::u32string s = utf8::to_u32(text_of(r, v));
  int64_t end_len = static_cast<int64_t>(utf8::length(end));
  if (length < end_len)
    fail("expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
  if (leeway < 0) fail("expected leeway >= 0, got " + std::to_string(leeway));
  if (static_cast<int64_t>(s.size()) <= length + leeway) return Value::string(utf8::from_u32(s));
  std::u32string head = s.substr(0, static_cast<size_t>(length - end_len));
  if (!killwords) {
    size_t space = head.rfind(U' ');
    if (space != std::u32string::npos) head.resize(space);
  }
  return Value::string(utf8::from_u32(head) + end);
}

Value filter_tojson(Renderer& r, Value& v, CallArgs& args) {
  BoundArgs b(args, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions options;
  options.ensure_ascii = b.get_bool(0, false);
  options.sort_keys = b.get_bool(3, false);
  const Value& indent = b.get(1);
  if (indent.is_string()) {
    options.has_indent = true;
    options.indent = indent.str();
  } else if (indent.is_integral()) {
    int64_t n = std::clamp<int64_t>(indent.as_int(), 0, 1024);
    options.has_indent = true;
    options.indent.assign(static_cast<size_t>(n), ' ');
  } else if (!indent.is_none() && !indent.is_undefined()) {
    fail("tojson indent must be an integer or a string");
  }
  if (options.has_indent) options.item_separator = ",";
  const Value& separators = b.get(2);
  if (separators.is_list()) {
    const auto& items = separators.list().items;
    if (items.size() != 2 || !items[0].is_string() || !items[1].is_string()) {
      fail("tojson separators must be an (item_separator, key_separator) pair of strings");
    }
    options.item_separator = items[0].str();
    options.key_separator = items[1].str();
  }
  return Value::string(to_json(v, options, r.limits().max_output_bytes));
}

Value filter_wordcount(Renderer& r, Value& v, CallArgs& args) {
  BoundArgs(args, "wordcount", {});
  std::string s = text_of(r, v);
  int64_t words = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    char32_t c = utf8::decode(s, i);
    bool word_char = utf8::is_alpha(c) || utf8::is_digit(c) || c == '_';
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value::integer(words);
}

Value filter_striptags(Renderer& r, Value& v, CallArgs& args) {
  BoundArgs(args, "striptags", {});
  std::string s = text_of(r, v), stripped;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 4, "<!--") == 0) {
      size_t end = s.find("-->", i + 4);
      if (end == std::string::npos) break;
      i = end + 2;
    } else if (s[i] == '<' && s.find('>', i) != std::string::npos) {
      i = s.find('>', i);
    } else {
      stripped.push_back(s[i]);
    }
  }
  std::string out;
  for (const std::string& word : py_split(stripped, Value::none(), -1, false)) {
    if (!out.empty()) out += " ";
    out += word;
  }
  return Value::string(std::move(out));
}

Value filter_urlencode(Renderer& r, Value& v, CallArgs& args) {
  BoundArgs(args, "urlencode", {});
  auto quote = [](std::string_view s, bool keep_slash) {
    std::string out;
    for (unsigned char c : s) {
      if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' ||
          (keep_slash && c == '/')) {
        out.push_back(static_cast<char>(c));
      } else {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%%%02X", c);
        out += buf;
      }
    }
    return out;
  };
  if (v.is_string()) return Value::string(quote(v.str(), true));
  std::vector<std::pair<Value, Value>> pairs;
  if (v.is_dict()) {
    pairs = v.dict().entries;
  } else {
    for (const Value& item : iterate(v)) {
      std::vector<Value> kv = iterate(item);
      if (kv.size() != 2) fail("urlencode expects a string, a mapping or a sequence of pairs");
      pairs.emplace_back(kv[0], kv[1]);
    }
  }
  std::string out;
  for (const auto& [k, val] : pairs) {
    if (!out.empty()) out += "&";
    out += quote(text_of(r, k), false) + "=" + quote(text_of(r, val), false);
  }
  return Value::string(std::move(out));
}

const std::pair<std::string_view, Filter> kFilters[] = {
    {"upper",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs(a, "upper", {});
       return Value::string(utf8::upper(text_of(r, v)));
     }},
    {"lower",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs(a, "lower", {});
       return Value::string(utf8::lower(text_of(r, v)));
     }},
    {"capitalize",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs(a, "capitalize", {});
       return Value::string(py_capitalize(text_of(r, v)));
     }},
    {"title",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs(a, "title", {});
       return Value::string(jinja_title(text_of(r, v)));
     }},
    {"trim",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs b(a, "trim", {"chars"});
       return strip_value(v.is_string() ? v : Value::string(text_of(r, v)), b.get_or_none(0), true,
                          true);
     }},
    {"replace",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs b(a, "replace", {"old", "new", "count"}, 2);
       return Value::string(py_replace(r, text_of(r, v), text_of(r, b.get(0)), text_of(r, b.get(1)),
                                       b.get_int(2, -1)));
     }},
    {"string",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs(a, "string", {});
       return Value::string(text_of(r, v));
     }},
    {"safe",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs(a, "safe", {});
       return v.is_string() ? v : Value::string(text_of(r, v));  // Markup(value) is a str
     }},
    {"escape",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs(a, "escape", {});
       return Value::string(html_escape(text_of(r, v), HtmlQuotes::kNumeric));
     }},
    {"e",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs(a, "e", {});
       return Value::string(html_escape(text_of(r, v), HtmlQuotes::kNumeric));
     }},
    {"forceescape",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs(a, "forceescape", {});
       return Value::string(html_escape(text_of(r, v), HtmlQuotes::kNumeric));
     }},
    {"pprint",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs(a, "pprint", {});
       return Value::string(to_repr(v, r.limits().max_output_bytes));
     }},
    {"center",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs b(a, "center", {"width"});
       CallArgs call;
       call.positional.push_back(Value::integer(b.get_int(0, 80)));
       return get_method(Value::string(text_of(r, v)), "center").func().call(r, call);
     }},
    {"format",
     [](Renderer& r, Value& v, CallArgs& a) {
       if (!a.positional.empty() && !a.keyword.empty())
         fail("can't handle positional and keyword arguments at the same time");
       Value args;
       if (!a.keyword.empty()) {
         args = Value::make_dict();
         for (auto& [k, val] : a.keyword) args.dict().set(Value::string(k), val);
       } else {
         args = Value::make_list(a.positional, true);
       }
       return Value::string(percent_format(text_of(r, v), args, r.limits().max_output_bytes));
     }},
    {"int", filter_int},
    {"float", filter_float},
    {"round", filter_round},
    {"abs",
     [](Renderer&, Value& v, CallArgs& a) {
       BoundArgs(a, "abs", {});
       if (v.is_float()) return Value::number(std::fabs(v.as_double()));
       if (!v.is_integral()) fail("bad operand type for abs(): '" + type_name(v) + "'");
       if (v.as_int() == std::numeric_limits<int64_t>::min()) fail("integer overflow");
       return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
     }},
    {"indent", filter_indent},
    {"truncate", filter_truncate},
    {"wordcount", filter_wordcount},
    {"striptags", filter_striptags},
    {"urlencode", filter_urlencode},
    {"tojson", filter_tojson},
    {"from_json",
     [](Renderer&, Value& v, CallArgs& a) {
       BoundArgs(a, "from_json", {});
       if (!v.is_string()) fail("from_json expects a string, got " + type_name(v));
       return parse_json(v.str());
     }},
    {"default",
     [](Renderer&, Value& v, CallArgs& a) {
       BoundArgs b(a, "default", {"default_value", "boolean"});
       bool use_default = v.is_undefined() || (b.get_bool(1, false) && !truthy(v));
       if (!use_default) return v;
       return b.has(0) ? b.get(0) : Value::string("");
     }},
    // attr() reads Python attributes only: dict methods, or namespace and loop fields.
    {"attr",
     [](Renderer& r, Value& v, CallArgs& a) {
       BoundArgs b(a, "attr", {"name"}, 1);
       std::string name = b.get_string(0, "");
       if (v.is_dict() && v.dict().flavor != DictFlavor::Plain) return r.get_attr(v, name);
       if (v.is_string() || v.is_list() || v.is_dict()) {
         Value method = get_method(v, name);
         if (!method.is_undefined()) return method;
       }
       if (v.is_undefined()) fail_undefined(v);
       if (name.rfind("__", 0) == 0) {
         fail("access to attribute '" + name + "' of '" + type_name(v) + "' object is unsafe");
       }
       return Value::undefined("'" + type_name(v) + " object' has no attribute '" + name + "'");
     }},
};

}  // namespace

bool has_filter(std::string_view name) {
  if (name == "d") return true;
  for (const auto& [n, fn] : kFilters) {
    if (n == name) return true;
  }
  return has_seq_filter(name);
}

Value apply_filter(Renderer& r, std::string_view name, Value operand, CallArgs& args) {
  if (name == "d") name = "default";
  for (const auto& [n, fn] : kFilters) {
    if (n == name) return fn(r, operand, args);
  }
  bool handled = false;
  Value result = apply_seq_filter(r, name, operand, args, handled);
  if (!handled) fail("no filter named '" + std::string(name) + "'");
  return result;
}

}  // namespace strata::chat
