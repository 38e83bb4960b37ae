// Splits template source into tokens the way Jinja2's lexer does with the options
// transformers uses (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False):
// newlines are normalised to "\n", one trailing newline is dropped, `{%-`/`-%}` strip
// whitespace, and comments and raw blocks are resolved here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::chat {

struct SourcePos {
  uint32_t line = 0;
  uint32_t col = 0;
};

enum class TokenType : uint8_t {
  Data,        // literal template text
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,    // text holds the decoded value
  Integer,   // int_value
  Float,     // float_value
  Operator,  // text holds the operator
  Eof,
};

struct Token {
  TokenType type = TokenType::Eof;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  SourcePos pos;
};

// Throws strata::Error("name:line:col: message") on malformed input.
std::vector<Token> tokenize(std::string_view source, const std::string& template_name);

// "name:line:col: message", the form of every error the template engine reports.
std::string format_error(const std::string& template_name, SourcePos pos,
                         const std::string& message);

}  // namespace strata::chat
