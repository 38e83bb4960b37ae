// tojson as transformers defines it: Python's json.dumps(value, ensure_ascii=...,
// indent=..., separators=..., sort_keys=...), byte for byte.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat_template/budget.h"
#include "chat_template/builtins.h"
#include "chat_template/unicode.h"

namespace strata::chat {

namespace {

class JsonWriter {
 public:
  JsonWriter(const JsonOptions& options, size_t max_bytes) : opt_(options), max_bytes_(max_bytes) {}

  void write(const Value& v, int depth) {
    if (depth > kMaxValueDepth)
      fail("circular reference detected (or structure too deeply nested) in tojson");
    charge_work(kItemUnits);  // structures that share items print exponentially many
    switch (v.kind()) {
      case Kind::None:
        put("null");
        return;
      case Kind::Bool:
        put(v.as_bool() ? "true" : "false");
        return;
      case Kind::Int:
        put(std::to_string(v.as_int()));
        return;
      case Kind::Float:
        put(float_text(v.as_double()));
        return;
      case Kind::String:
        write_string(v.str());
        return;
      case Kind::List:
        write_list(v.list().items, depth);
        return;
      case Kind::Dict:
        if (v.dict().flavor != DictFlavor::Plain) break;
        write_dict(v.dict(), depth);
        return;
      default:
        break;
    }
    fail("Object of type " + type_name(v) + " is not JSON serializable");
  }

  std::string take() { return std::move(out_); }

 private:
  static std::string float_text(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return format_float(d);
  }

  void put(std::string_view s) {
    if (out_.size() + s.size() > max_bytes_) fail("tojson output exceeds the output size limit");
    out_.append(s);
  }

  void newline(int depth) {
    if (!opt_.has_indent) return;
    put("\n");
    for (int i = 0; i < depth; ++i) put(opt_.indent);
  }

  void write_string(std::string_view s) {
    charge_work(s.size());  // escaped byte by byte
    std::string buf = "\"";
    char hex[16];
    for (size_t i = 0; i < s.size();) {
      size_t start = i;
      char32_t cp = utf8::decode(s, i);
      switch (cp) {
        case '"':
          buf += "\\\"";
          continue;
        case '\\':
          buf += "\\\\";
          continue;
        case '\n':
          buf += "\\n";
          continue;
        case '\r':
          buf += "\\r";
          continue;
        case '\t':
          buf += "\\t";
          continue;
        case '\b':
          buf += "\\b";
          continue;
        case '\f':
          buf += "\\f";
          continue;
        default:
          break;
      }
      if (cp < 0x20 || (opt_.ensure_ascii && cp > 0x7E)) {
        if (cp > 0xFFFF) {
          char32_t v = cp - 0x10000;
          std::snprintf(hex, sizeof hex, "\\u%04x\\u%04x",
                        static_cast<unsigned>(0xD800 + (v >> 10)),
                        static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
        } else {
          std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned>(cp));
        }
        buf += hex;
      } else {
        buf.append(s.substr(start, i - start));
      }
    }
    buf += "\"";
    put(buf);
  }

  void write_list(const std::vector<Value>& items, int depth) {
    if (items.empty()) return put("[]");
    put("[");
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) put(opt_.item_separator);
      newline(depth + 1);
      write(items[i], depth + 1);
    }
    newline(depth);
    put("]");
  }

  // Python converts keys to strings: True -> "true", None -> "null", 1.5 -> "1.5".
  std::string key_text(const Value& k) {
    switch (k.kind()) {
      case Kind::String:
        return k.str();
      case Kind::Bool:
        return k.as_bool() ? "true" : "false";
      case Kind::None:
        return "null";
      case Kind::Int:
        return std::to_string(k.as_int());
      case Kind::Float:
        return float_text(k.as_double());
      default:
        fail("keys must be str, int, float, bool or None, not " + type_name(k));
    }
  }

  void write_dict(const DictObj& d, int depth) {
    if (d.entries.empty()) return put("{}");
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& e : d.entries) entries.push_back(&e);
    if (opt_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](auto* a, auto* b) { return compare(a->first, b->first) < 0; });
    }
    put("{");
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) put(opt_.item_separator);
      newline(depth + 1);
      write_string(key_text(entries[i]->first));
      put(opt_.key_separator);
      write(entries[i]->second, depth + 1);
    }
    newline(depth);
    put("}");
  }

  const JsonOptions& opt_;
  size_t max_bytes_;
  std::string out_;
};

}  // namespace

std::string to_json(const Value& v, const JsonOptions& options, size_t max_bytes) {
  JsonWriter w(options, max_bytes);
  w.write(v, 0);
  return w.take();
}

}  // namespace strata::chat
