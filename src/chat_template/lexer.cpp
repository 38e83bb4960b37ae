#include "chat_template/lexer.h"

#include <charconv>
#include <cstring>

#include "chat_template/unicode.h"
#include "core/error.h"

namespace strata::chat {

std::string format_error(const std::string& template_name, SourcePos pos,
                         const std::string& message) {
  return template_name + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.col) + ": " +
         message;
}

namespace {

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Jinja2 applies newline normalisation and drops one trailing newline before lexing.
std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& name)
      : src_(normalize_source(source)), name_(name) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t tag = find_tag_start(pos_);
      if (tag == std::string::npos) {
        emit_data(src_.substr(pos_), pos_);
        break;
      }
      char kind = src_[tag + 1];
      size_t after = tag + 2;
      char sign = 0;
      if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) sign = src_[after++];
      size_t raw_end = 0;
      bool raw = kind == '%' && match_raw_begin(after, raw_end);
      std::string text = src_.substr(pos_, tag - pos_);
      strip_before_tag(text, sign, kind != '{');
      emit_data(std::move(text), pos_);
      line_starting_ = false;
      if (raw) {
        lex_raw(tag, raw_end);
      } else if (kind == '#') {
        lex_comment(tag, after);
      } else {
        lex_tag(kind, tag, after);
      }
    }
    Token eof;
    eof.type = TokenType::Eof;
    eof.pos = position(src_.size());
    tokens_.push_back(std::move(eof));
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void error(size_t offset, const std::string& message) {
    throw strata::Error(format_error(name_, position(offset), message));
  }

  // Line and column (both 1-based, column in code points) of a byte offset. Offsets are
  // requested in increasing order, so the scan resumes from the last answer.
  SourcePos position(size_t offset) {
    if (offset < cursor_offset_) {
      cursor_offset_ = 0;
      cursor_ = SourcePos{1, 1};
    }
    offset = std::min(offset, src_.size());
    while (cursor_offset_ < offset) {
      if (src_[cursor_offset_] == '\n') {
        ++cursor_.line;
        cursor_.col = 1;
        ++cursor_offset_;
      } else {
        utf8::decode(src_, cursor_offset_);
        ++cursor_.col;
      }
    }
    return cursor_;
  }

  size_t find_tag_start(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    }
    return std::string::npos;
  }

  bool starts_with(size_t at, std::string_view s) const {
    return at <= src_.size() && src_.compare(at, s.size(), s) == 0;
  }

  size_t skip_space(size_t p) const {
    while (p < src_.size() && is_ascii_space(src_[p])) ++p;
    return p;
  }

  // Jinja2's OptionalLStrip: `-` strips all whitespace before the tag; otherwise
  // lstrip_blocks removes spaces and tabs between a line start and a block or comment tag.
  void strip_before_tag(std::string& text, char sign, bool is_block_like) const {
    if (sign == '-') {
      size_t end = text.size();
      while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t i = start;
        if (!utf8::is_space(utf8::decode(text, i))) break;
        end = start;
      }
      text.resize(end);
      return;
    }
    if (sign == '+' || !is_block_like) return;
    size_t nl = text.rfind('\n');
    size_t line_start = nl == std::string::npos ? 0 : nl + 1;
    if (line_start == 0 && !line_starting_) return;
    for (size_t i = line_start; i < text.size(); ++i) {
      if (text[i] != ' ' && text[i] != '\t') return;
    }
    text.resize(line_start);
  }

  void emit_data(std::string text, size_t offset) {
    if (text.empty()) return;
    Token t;
    t.type = TokenType::Data;
    t.text = std::move(text);
    t.pos = position(offset);
    tokens_.push_back(std::move(t));
  }

  void emit(TokenType type, size_t offset, std::string text = {}) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    t.pos = position(offset);
    tokens_.push_back(std::move(t));
  }

  // `{% raw %}` with optional whitespace control; `after` is just past "{%" and its sign.
  bool match_raw_begin(size_t after, size_t& end) const {
    size_t p = skip_space(after);
    if (!starts_with(p, "raw")) return false;
    p = skip_space(p + 3);
    if (starts_with(p, "-%}")) {
      end = skip_space(p + 3);
      return true;
    }
    if (starts_with(p, "%}")) {
      end = p + 2;
      return true;
    }
    return false;
  }

  void lex_raw(size_t tag, size_t body_start) {
    for (size_t p = src_.find("{%", body_start); p != std::string::npos;
         p = src_.find("{%", p + 1)) {
      size_t q = p + 2;
      char sign = 0;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      q = skip_space(q);
      if (!starts_with(q, "endraw")) continue;
      q = skip_space(q + 6);
      size_t end;
      if (starts_with(q, "+%}")) {
        end = q + 3;
      } else if (starts_with(q, "-%}")) {
        end = skip_space(q + 3);
      } else if (starts_with(q, "%}")) {
        end = q + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      std::string text = src_.substr(body_start, p - body_start);
      strip_before_tag(text, sign, true);
      emit_data(std::move(text), body_start);
      finish_tag(end);
      return;
    }
    error(tag, "missing end of raw directive");
  }

  void lex_comment(size_t tag, size_t after) {
    for (size_t p = after; p < src_.size(); ++p) {
      if (starts_with(p, "+#}")) return finish_tag(p + 3);
      if (starts_with(p, "-#}")) return finish_tag(skip_space(p + 3));
      if (starts_with(p, "#}")) {
        size_t end = p + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
        return finish_tag(end);
      }
    }
    // Jinja2's lexer silently stops at a comment opener with nothing after it.
    if (after >= src_.size()) return finish_tag(src_.size());
    error(tag, "missing end of comment tag");
  }

  void finish_tag(size_t end) {
    line_starting_ = end > 0 && src_[end - 1] == '\n';
    pos_ = end;
  }

  // Matches the end of a `{{ }}` or `{% %}` tag at p, returning the offset after it (with
  // the whitespace that `-` or trim_blocks consumes), or 0.
  size_t match_tag_end(char kind, size_t p) const {
    if (kind == '%') {
      if (starts_with(p, "-%}")) return skip_space(p + 3);
      if (starts_with(p, "+%}")) return p + 3;
      if (starts_with(p, "%}")) return (p + 2 < src_.size() && src_[p + 2] == '\n') ? p + 3 : p + 2;
      return 0;
    }
    if (starts_with(p, "-}}")) return skip_space(p + 3);
    if (starts_with(p, "}}")) return p + 2;
    return 0;
  }

  void lex_tag(char kind, size_t tag, size_t after) {
    emit(kind == '%' ? TokenType::BlockBegin : TokenType::VarBegin, tag);
    std::string brackets;  // expected closing brackets, innermost last
    size_t p = after;
    while (true) {
      p = skip_space(p);
      if (p >= src_.size()) {
        error(p, kind == '%' ? "unexpected end of template, expected '%}'"
                             : "unexpected end of template, expected '}}'");
      }
      if (brackets.empty()) {
        if (size_t end = match_tag_end(kind, p)) {
          emit(kind == '%' ? TokenType::BlockEnd : TokenType::VarEnd, p);
          finish_tag(end);
          return;
        }
      }
      p = lex_token(p, brackets);
    }
  }

  size_t lex_token(size_t p, std::string& brackets) {
    char c = src_[p];
    if (is_digit(c)) return lex_number(p);
    if (is_name_start(c)) {
      size_t q = p;
      while (q < src_.size() && is_name_char(src_[q])) ++q;
      emit(TokenType::Name, p, src_.substr(p, q - p));
      return q;
    }
    if (c == '\'' || c == '"') return lex_string(p);
    static const char* const kTwoChar[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwoChar) {
      if (starts_with(p, op)) {
        emit(TokenType::Operator, p, op);
        return p + 2;
      }
    }
    if (std::strchr("+-/*%~[](){}<>=.:|,;", c) == nullptr || c == '\0') {
      error(p, std::string("unexpected character '") + c + "'");
    }
    if (c == '(' || c == '[' || c == '{') {
      brackets.push_back(c == '(' ? ')' : (c == '[' ? ']' : '}'));
    } else if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty()) error(p, std::string("unexpected '") + c + "'");
      if (brackets.back() != c) {
        error(p, std::string("unexpected '") + c + "', expected '" + brackets.back() + "'");
      }
      brackets.pop_back();
    }
    emit(TokenType::Operator, p, std::string(1, c));
    return p + 1;
  }

  // Digits with single underscores between them, as in Python literals.
  size_t scan_digits(size_t p, int (*digit)(char)) const {
    size_t q = p;
    while (q < src_.size() && digit(src_[q]) >= 0) {
      ++q;
      if (q + 1 < src_.size() && src_[q] == '_' && digit(src_[q + 1]) >= 0) ++q;
    }
    return q;
  }

  static int dec_digit(char c) { return is_digit(c) ? c - '0' : -1; }

  size_t lex_number(size_t p) {
    size_t int_end = scan_digits(p, dec_digit);
    bool after_dot = p > 0 && src_[p - 1] == '.';
    // Float: digits, then a fraction and/or an exponent (not directly after a '.').
    if (!after_dot) {
      size_t q = int_end;
      bool has_frac = false;
      if (q + 1 < src_.size() && src_[q] == '.' && is_digit(src_[q + 1])) {
        q = scan_digits(q + 1, dec_digit);
        has_frac = true;
      }
      size_t exp_end = 0;
      if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
        size_t r = q + 1;
        if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
        if (r < src_.size() && is_digit(src_[r])) exp_end = scan_digits(r, dec_digit);
      }
      if (exp_end) q = exp_end;
      if (has_frac || exp_end) {
        std::string text;
        for (size_t i = p; i < q; ++i) {
          if (src_[i] != '_') text.push_back(src_[i]);
        }
        Token t;
        t.type = TokenType::Float;
        t.pos = position(p);
        std::from_chars(text.data(), text.data() + text.size(), t.float_value);
        if (t.float_value != t.float_value) t.float_value = 0;
        t.text = std::move(text);
        tokens_.push_back(std::move(t));
        return q;
      }
    }
    int base = 10;
    size_t digits_start = p;
    size_t end = int_end;
    if (src_[p] == '0' && p + 1 < src_.size()) {
      char x = static_cast<char>(src_[p + 1] | 0x20);
      if (x == 'x' || x == 'o' || x == 'b') {
        base = x == 'x' ? 16 : (x == 'o' ? 8 : 2);
        size_t q = p + 2;
        if (q < src_.size() && src_[q] == '_') ++q;
        auto digit =
            base == 16
                ? +[](char c) { return hex_value(c); }
                : (base == 8 ? +[](char c) { return (c >= '0' && c <= '7') ? c - '0' : -1; }
                             : +[](char c) { return (c == '0' || c == '1') ? c - '0' : -1; });
        size_t e = scan_digits(q, digit);
        if (e > q) {
          digits_start = q;
          end = e;
        } else {
          base = 10;
        }
      }
      if (base == 10) {
        // Python rejects leading zeros: "0" (or "0_0...") is one token.
        end = p + 1;
        while (end + 1 < src_.size() &&
               (src_[end] == '0' || (src_[end] == '_' && src_[end + 1] == '0')))
          ++end;
      }
    }
    std::string digits;
    for (size_t i = digits_start; i < end; ++i) {
      if (src_[i] != '_') digits.push_back(src_[i]);
    }
    Token t;
    t.type = TokenType::Integer;
    t.pos = position(p);
    auto res = std::from_chars(digits.data(), digits.data() + digits.size(), t.int_value, base);
    if (res.ec != std::errc()) error(p, "integer literal too large");
    t.text = std::move(digits);
    tokens_.push_back(std::move(t));
    return end;
  }

  size_t lex_string(size_t p) {
    char quote = src_[p];
    size_t q = p + 1;
    while (q < src_.size() && src_[q] != quote) {
      if (src_[q] == '\\') ++q;
      ++q;
    }
    if (q >= src_.size()) error(p, "unterminated string literal");
    Token t;
    t.type = TokenType::String;
    t.pos = position(p);
    t.text = decode_escapes(p + 1, q);
    tokens_.push_back(std::move(t));
    return q + 1;
  }

  // Python's unicode-escape decoding of a string literal's body.
  std::string decode_escapes(size_t begin, size_t end) {
    std::string out;
    char32_t pending_high = 0;  // a \uD83D waiting for its low surrogate
    auto flush = [&] {
      if (pending_high) utf8::append(out, 0xFFFD);
      pending_high = 0;
    };
    auto put = [&](char32_t cp) {
      if (cp >= 0xDC00 && cp <= 0xDFFF && pending_high) {
        utf8::append(out, 0x10000 + ((pending_high - 0xD800) << 10) + (cp - 0xDC00));
        pending_high = 0;
        return;
      }
      flush();
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        pending_high = cp;
        return;
      }
      utf8::append(out, (cp >= 0xDC00 && cp <= 0xDFFF) ? 0xFFFD : cp);
    };
    for (size_t i = begin; i < end;) {
      char c = src_[i];
      if (c != '\\') {
        flush();
        out.push_back(c);
        ++i;
        continue;
      }
      char n = src_[i + 1];
      i += 2;
      switch (n) {
        case '\n':
          break;
        case '\\':
          put('\\');
          break;
        case '\'':
          put('\'');
          break;
        case '"':
          put('"');
          break;
        case 'a':
          put(7);
          break;
        case 'b':
          put(8);
          break;
        case 'f':
          put(12);
          break;
        case 'n':
          put('\n');
          break;
        case 'r':
          put('\r');
          break;
        case 't':
          put('\t');
          break;
        case 'v':
          put(11);
          break;
        case 'x':
        case 'u':
        case 'U': {
          int len = n == 'x' ? 2 : (n == 'u' ? 4 : 8);
          char32_t cp = 0;
          for (int k = 0; k < len; ++k) {
            int h = i + k < end ? hex_value(src_[i + k]) : -1;
            if (h < 0) error(i - 2, std::string("truncated \\") + n + " escape in string literal");
            cp = cp * 16 + static_cast<char32_t>(h);
          }
          if (cp > 0x10FFFF) error(i - 2, "illegal Unicode character in string literal");
          i += static_cast<size_t>(len);
          put(cp);
          break;
        }
        case 'N':
          error(i - 2, "\\N{...} escapes are not supported in string literals");
        default:
          if (n >= '0' && n <= '7') {
            char32_t cp = static_cast<char32_t>(n - '0');
            for (int k = 0; k < 2 && i < end && src_[i] >= '0' && src_[i] <= '7'; ++k)
              cp = cp * 8 + (src_[i++] - '0');
            put(cp);
          } else {
            flush();
            out.push_back('\\');  // unknown escapes keep their backslash
            out.push_back(n);
          }
      }
    }
    flush();
    return out;
  }

  std::string src_;
  const std::string& name_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  size_t cursor_offset_ = 0;
  SourcePos cursor_{1, 1};
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& template_name) {
  return Lexer(source, template_name).run();
}

}  // namespace strata::chat
