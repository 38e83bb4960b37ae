// HTML/XML escaping of text, for the chat templates' `escape` filter and the load
// generator's SVG plots.
#pragma once

#include <string>
#include <string_view>

namespace strata {

// How html_escape writes the quote characters; &, < and > are escaped either way.
enum class HtmlQuotes {
  kNamed,    // " as &quot;, ' left as is (text and double-quoted attributes in XML/SVG)
  kNumeric,  // " as &#34;, ' as &#39; (MarkupSafe's escape, which Jinja2's filters use)
};

inline std::string html_escape(std::string_view s, HtmlQuotes quotes) {
  const bool numeric = quotes == HtmlQuotes::kNumeric;
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += numeric ? "&#34;" : "&quot;";
        break;
      case '\'':
        if (numeric) {
          out += "&#39;";
        } else {
          out.push_back(c);
        }
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

}  // namespace strata
