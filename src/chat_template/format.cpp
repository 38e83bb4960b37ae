// Python string formatting: printf-style `fmt % args` (also the `format` filter) and
// str.format() with the format-spec mini-language.
#include <cmath>
#include <cstdio>

#include "chat_template/builtins.h"
#include "chat_template/unicode.h"

namespace strata::chat {

namespace {

constexpr int64_t kMaxWidth = 1 << 20;

struct Spec {
  char fill = ' ';
  char align = 0;  // '<', '>', '^', '=' or 0 for the type's default
  char sign = '-';
  bool alternate = false;
  bool zero = false;
  int64_t width = 0;
  int64_t precision = -1;
  char grouping = 0;
  char type = 0;
};

std::string pad_to(std::string s, const Spec& spec, char default_align) {
  int64_t len = static_cast<int64_t>(utf8::length(s));
  if (spec.width <= len) return s;
  size_t fill = static_cast<size_t>(spec.width - len);
  char align = spec.align ? spec.align : default_align;
  if (align == '<') return s + std::string(fill, spec.fill);
  if (align == '^')
    return std::string(fill / 2, spec.fill) + s + std::string(fill - fill / 2, spec.fill);
  if (align == '=' && !s.empty() && (s[0] == '-' || s[0] == '+' || s[0] == ' ')) {
    return s.substr(0, 1) + std::string(fill, spec.fill) + s.substr(1);
  }
  return std::string(fill, spec.fill) + s;
}

std::string group_digits(std::string digits, char sep) {
  if (!sep) return digits;
  size_t end = digits.find_first_not_of("0123456789", digits[0] == '-' ? 1 : 0);
  if (end == std::string::npos) end = digits.size();
  size_t begin = digits[0] == '-' ? 1 : 0;
  for (int64_t i = static_cast<int64_t>(end) - 3; i > static_cast<int64_t>(begin); i -= 3) {
    digits.insert(static_cast<size_t>(i), 1, sep);
  }
  return digits;
}

std::string format_int(int64_t v, const Spec& spec) {
  char type = spec.type ? spec.type : 'd';
  if (type == 'c') {
    std::string s;
    utf8::append(s, static_cast<char32_t>(v));
    return s;
  }
  bool negative = v < 0;
  uint64_t mag = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits;
  int base = type == 'x' || type == 'X' ? 16 : type == 'o' ? 8 : type == 'b' ? 2 : 10;
  if (type != 'd' && type != 'n' && base == 10)
    fail(std::string("unknown format code '") + type + "' for int");
  do {
    int d = static_cast<int>(mag % static_cast<uint64_t>(base));
    digits.insert(digits.begin(),
                  static_cast<char>(d < 10 ? '0' + d : (type == 'X' ? 'A' : 'a') + d - 10));
    mag /= static_cast<uint64_t>(base);
  } while (mag);
  if (spec.precision > static_cast<int64_t>(digits.size())) {  // printf: minimum digits
    digits.insert(0, static_cast<size_t>(spec.precision) - digits.size(), '0');
  }
  if (base == 10) digits = group_digits(digits, spec.grouping);
  std::string prefix = negative ? "-" : (spec.sign == '+' ? "+" : spec.sign == ' ' ? " " : "");
  if (spec.alternate && base != 10)
    prefix += base == 16 ? (type == 'X' ? "0X" : "0x") : base == 8 ? "0o" : "0b";
  if (spec.zero && spec.width > static_cast<int64_t>(prefix.size() + digits.size())) {
    digits.insert(0, static_cast<size_t>(spec.width) - prefix.size() - digits.size(), '0');
  }
  return prefix + digits;
}

std::string format_double(double v, const Spec& spec) {
  char type = spec.type;
  if (!type) {
    if (spec.precision < 0) {
      std::string s = format_float(v);
      if (v >= 0 && spec.sign != '-') s.insert(0, 1, spec.sign);
      return s;
    }
    type = 'g';
  }
  double value = v;
  std::string suffix;
  if (type == '%') {
    value *= 100;
    type = 'f';
    suffix = "%";
  }
  if (std::string("eEfFgG").find(type) == std::string::npos) {
    fail(std::string("unknown format code '") + type + "' for float");
  }
  int64_t precision = spec.precision < 0 ? 6 : std::min<int64_t>(spec.precision, 100);
  std::string fmt = "%";
  if (spec.sign == '+') fmt += '+';
  if (spec.sign == ' ') fmt += ' ';
  if (spec.alternate) fmt += '#';
  fmt += "." + std::to_string(precision) + type;
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt.c_str(), value);
  std::string s = buf;
  if (std::isinf(value) || std::isnan(value)) {
    for (char& c : s)
      c = static_cast<char>(std::isupper(static_cast<unsigned char>(type)) ? std::toupper(c)
                                                                           : std::tolower(c));
  }
  return group_digits(s, spec.grouping) + suffix;
}

// ---- printf style ---------------------------------------------------------------------------

class PercentFormatter {
 public:
  PercentFormatter(const Value& args, size_t max_bytes) : max_bytes_(max_bytes) {
    if (args.is_list() && args.list().is_tuple) {
      positional_ = args.list().items;
    } else if (args.is_dict()) {
      mapping_ = &args;
      positional_ = {args};
    } else {
      positional_ = {args};
      // Python skips the "not all arguments converted" check for a single argument that
      // supports indexing (a list, say), treating it like a mapping.
      lenient_ = args.is_list();
    }
  }

  std::string run(const std::string& fmt) {
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
      if (fmt[i] != '%') {
        out.push_back(fmt[i]);
        continue;
      }
      if (++i >= fmt.size()) fail("incomplete format");
      if (fmt[i] == '%') {
        out.push_back('%');
        continue;
      }
      const Value* value = nullptr;
      Value keyed;
      if (fmt[i] == '(') {
        size_t close = fmt.find(')', i);
        if (close == std::string::npos) fail("incomplete format key");
        if (!mapping_) fail("format requires a mapping");
        const Value* found =
            mapping_->dict().find(std::string_view(fmt).substr(i + 1, close - i - 1));
        if (!found) fail("KeyError: '" + fmt.substr(i + 1, close - i - 1) + "'");
        keyed = *found;
        value = &keyed;
        used_mapping_ = true;
        i = close + 1;
      }
      Spec spec;
      spec.align = '>';
      for (; i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos; ++i) {
        if (fmt[i] == '-') spec.align = '<';
        if (fmt[i] == '+') spec.sign = '+';
        if (fmt[i] == ' ' && spec.sign != '+') spec.sign = ' ';
        if (fmt[i] == '#') spec.alternate = true;
        if (fmt[i] == '0') spec.zero = true;
      }
      spec.width = read_number(fmt, i);
      if (i < fmt.size() && fmt[i] == '.') {
        ++i;
        spec.precision = read_number(fmt, i);
      }
      while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
      if (i >= fmt.size()) fail("incomplete format");
      if (spec.width > kMaxWidth) fail("format width too large");
      if (spec.align == '<') spec.zero = false;
      if (!value) value = &next_arg();
      out += convert(*value, fmt[i], spec);
      if (out.size() > max_bytes_) fail("formatted string exceeds the output size limit");
    }
    if (!mapping_ && !lenient_ && next_ < positional_.size())
      fail("not all arguments converted during string formatting");
    return out;
  }

 private:
  int64_t read_number(const std::string& fmt, size_t& i) {
    if (i < fmt.size() && fmt[i] == '*') {
      ++i;
      const Value& v = next_arg();
      if (!v.is_integral()) fail("* wants int");
      return std::max<int64_t>(0, v.as_int());
    }
    int64_t n = 0;
    while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
      n = std::min<int64_t>(n * 10 + (fmt[i] - '0'), kMaxWidth + 1);
      ++i;
    }
    return n;
  }

  const Value& next_arg() {
    if (mapping_ && used_mapping_) fail("format requires a mapping");
    if (next_ >= positional_.size()) fail("not enough arguments for format string");
    return positional_[next_++];
  }

  std::string convert(const Value& v, char conv, const Spec& spec) {
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        std::string s = conv == 's' ? to_str(v, max_bytes_) : to_repr(v, max_bytes_);
        if (spec.precision >= 0) {
          std::u32string u = utf8::to_u32(s);
          if (static_cast<int64_t>(u.size()) > spec.precision)
            s = utf8::from_u32(u.substr(0, static_cast<size_t>(spec.precision)));
        }
        return pad_to(s, spec, '>');
      }
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o': {
        if (!v.is_number())
          fail(std::string("%") + conv + " format: a real number is required, not " + type_name(v));
        if (v.is_float() && conv != 'd' && conv != 'i' && conv != 'u') {
          fail(std::string("%") + conv + " format: an integer is required, not float");
        }
        double d = v.as_double();
        if (v.is_float() && (std::isnan(d) || std::isinf(d) || std::fabs(d) >= 9.2e18))
          fail("cannot convert float to integer");
        Spec s = spec;
        s.type = conv == 'i' || conv == 'u' ? 'd' : conv;
        if (s.alternate && conv == 'o') s.alternate = true;
        std::string text = format_int(v.is_float() ? static_cast<int64_t>(d) : v.as_int(), s);
        return s.zero ? text : pad_to(text, spec, '>');
      }
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G': {
        if (!v.is_number()) fail(std::string("must be real number, not ") + type_name(v));
        Spec s = spec;
        s.type = conv;
        std::string text = format_double(v.as_double(), s);
        Spec padding = spec;
        if (padding.zero && padding.align != '<') padding.fill = '0', padding.align = '=';
        return pad_to(text, padding, '>');
      }
      case 'c': {
        if (v.is_string() && utf8::length(v.str()) == 1) return pad_to(v.str(), spec, '>');
        if (!v.is_integral()) fail("%c requires an int or a unicode character");
        std::string s;
        utf8::append(s, static_cast<char32_t>(v.as_int()));
        return pad_to(s, spec, '>');
      }
      default:
        fail(std::string("unsupported format character '") + conv + "'");
    }
  }

  std::vector<Value> positional_;
  const Value* mapping_ = nullptr;
  bool used_mapping_ = false;
  bool lenient_ = false;
  size_t next_ = 0;
  size_t max_bytes_;
};

// ---- str.format -----------------------------------------------------------------------------

Spec parse_spec(const std::string& s) {
  Spec spec;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (s.size() >= 2 && is_align(s[1])) {
    spec.fill = s[0];
    spec.align = s[1];
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    spec.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = s[i++];
  if (i < s.size() && s[i] == '#') spec.alternate = true, ++i;
  if (i < s.size() && s[i] == '0') {
    spec.zero = true;
    if (!spec.align) spec.fill = '0', spec.align = '=';
    ++i;
  }
  while (i < s.size() && s[i] >= '0' && s[i] <= '9')
    spec.width = std::min<int64_t>(spec.width * 10 + (s[i++] - '0'), kMaxWidth + 1);
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) spec.grouping = s[i++];
  if (i < s.size() && s[i] == '.') {
    ++i;
    spec.precision = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9')
      spec.precision = std::min<int64_t>(spec.precision * 10 + (s[i++] - '0'), 1000);
  }
  if (i < s.size()) spec.type = s[i++];
  if (i != s.size()) fail("invalid format specifier '" + s + "'");
  if (spec.width > kMaxWidth) fail("format width too large");
  return spec;
}

std::string apply_spec(const Value& v, const std::string& spec_text, size_t max_bytes) {
  Spec spec = parse_spec(spec_text);
  // Only str, int, float (and bool, as an int) take a non-empty format spec.
  if (!spec_text.empty() && !v.is_string() && !v.is_number()) {
    fail("unsupported format string passed to " + type_name(v) + ".__format__");
  }
  if (v.is_integral() && !(v.is_bool() && spec_text.empty())) {
    if (spec.type && std::string("eEfFgG%").find(spec.type) != std::string::npos) {
      return pad_to(format_double(v.as_double(), spec), spec, '>');
    }
    if (spec.precision >= 0) fail("Precision not allowed in integer format specifier");
    Spec s = spec;
    s.zero = false;
    return pad_to(format_int(v.as_int(), s), spec, '>');
  }
  if (v.is_float()) return pad_to(format_double(v.as_double(), spec), spec, '>');
  if (spec.type && spec.type != 's')
    fail(std::string("unknown format code '") + spec.type + "' for object of type '" +
         type_name(v) + "'");
  std::string s = to_str(v, max_bytes);
  if (spec.precision >= 0) {
    std::u32string u = utf8::to_u32(s);
    if (static_cast<int64_t>(u.size()) > spec.precision)
      s = utf8::from_u32(u.substr(0, static_cast<size_t>(spec.precision)));
  }
  return pad_to(s, spec, '<');
}

}  // namespace

std::string percent_format(const std::string& fmt, const Value& args, size_t max_bytes) {
  return PercentFormatter(args, max_bytes).run(fmt);
}

std::string str_format(Renderer& r, const std::string& fmt, CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}')
        ++i;
      else
        fail("single '}' encountered in format string");
      out.push_back('}');
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) fail("single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    if (field.find('{') != std::string::npos) fail("nested replacement fields are not supported");
    std::string spec, conversion;
    if (size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = field.substr(bang + 1);
      field.resize(bang);
    }
    size_t name_end = field.find_first_of(".[");
    std::string arg_name = field.substr(0, name_end);
    Value value;
    bool numeric = !arg_name.empty() && arg_name.size() < 10 &&
                   arg_name.find_first_not_of("0123456789") == std::string::npos;
    if (arg_name.empty() || numeric) {
      size_t index =
          arg_name.empty() ? auto_index++ : static_cast<size_t>(std::stoul(arg_name.substr(0, 9)));
      if (index >= args.positional.size())
        fail("Replacement index " + std::to_string(index) +
             " out of range for positional args tuple");
      value = args.positional[index];
    } else {
      bool found = false;
      for (auto& [k, v] : args.keyword) {
        if (k == arg_name) value = v, found = true;
      }
      if (!found) fail("KeyError: '" + arg_name + "'");
    }
    // Attribute and index accessors: .name and [key].
    for (size_t p = name_end; p != std::string::npos && p < field.size();) {
      if (field[p] == '.') {
        size_t next = field.find_first_of(".[", p + 1);
        value = r.get_attr(value, field.substr(p + 1, next == std::string::npos ? std::string::npos
                                                                                : next - p - 1));
        p = next;
      } else {
        size_t end = field.find(']', p);
        if (end == std::string::npos) fail("missing ']' in format string");
        std::string key = field.substr(p + 1, end - p - 1);
        bool numeric = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos &&
                       key.size() < 18;
        value = r.get_item(value, numeric ? Value::integer(std::stoll(key)) : Value::string(key));
        p = end + 1;
      }
    }
    if (conversion == "r" || conversion == "a") {
      value = Value::string(to_repr(value, r.limits().max_output_bytes));
    } else if (conversion == "s") {
      value = Value::string(to_str(value, r.limits().max_output_bytes));
    } else if (!conversion.empty()) {
      fail("unknown conversion specifier " + conversion);
    }
    out += apply_spec(value, spec, r.limits().max_output_bytes);
    r.check_text_size(out.size());
  }
  return out;
}

}  // namespace strata::chat
