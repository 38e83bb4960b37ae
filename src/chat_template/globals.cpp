// Global functions visible to every template: Jinja2's range, namespace, dict, cycler and
// joiner, plus transformers' raise_exception and strftime_now.
#include <ctime>

#include "chat_template/builtins.h"

namespace strata::chat {

namespace {

const char* const kDays[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                             "Thursday", "Friday", "Saturday"};
const char* const kMonths[] = {"January",   "February", "March",    "April",
                               "May",       "June",     "July",     "August",
                               "September", "October",  "November", "December"};

// strftime in UTC and the C locale, accepting glibc's `%-d` (no padding) as Python on
// Linux does. Unknown directives are copied through.
std::string format_time(std::time_t t, const std::string& fmt) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%' || i + 1 == fmt.size()) {
      out.push_back(fmt[i]);
      continue;
    }
    bool no_pad = fmt[i + 1] == '-' && i + 2 < fmt.size();
    char c = fmt[i + (no_pad ? 2 : 1)];
    i += no_pad ? 2 : 1;
    auto num = [&](int v, int width) {
      std::string s = std::to_string(v);
      if (!no_pad && static_cast<int>(s.size()) < width)
        s.insert(0, static_cast<size_t>(width) - s.size(), '0');
      out += s;
    };
    int hour12 = tm.tm_hour % 12 == 0 ? 12 : tm.tm_hour % 12;
    switch (c) {
      case 'a':
        out += std::string(kDays[tm.tm_wday]).substr(0, 3);
        break;
      case 'A':
        out += kDays[tm.tm_wday];
        break;
      case 'b':
      case 'h':
        out += std::string(kMonths[tm.tm_mon]).substr(0, 3);
        break;
      case 'B':
        out += kMonths[tm.tm_mon];
        break;
      case 'd':
        num(tm.tm_mday, 2);
        break;
      case 'e':
        out += (tm.tm_mday < 10 && !no_pad ? " " : "") + std::to_string(tm.tm_mday);
        break;
      case 'H':
        num(tm.tm_hour, 2);
        break;
      case 'I':
        num(hour12, 2);
        break;
      case 'j':
        num(tm.tm_yday + 1, 3);
        break;
      case 'm':
        num(tm.tm_mon + 1, 2);
        break;
      case 'M':
        num(tm.tm_min, 2);
        break;
      case 'S':
        num(tm.tm_sec, 2);
        break;
      case 'p':
        out += tm.tm_hour < 12 ? "AM" : "PM";
        break;
      case 'y':
        num(tm.tm_year % 100, 2);
        break;
      case 'Y':
        out += std::to_string(tm.tm_year + 1900);
        break;
      case 'w':
        out += std::to_string(tm.tm_wday);
        break;
      case 'u':
        out += std::to_string(tm.tm_wday == 0 ? 7 : tm.tm_wday);
        break;
      case 'Z':
        out += "UTC";
        break;
      case 'z':
        out += "+0000";
        break;
      case 'F':
        out += format_time(t, "%Y-%m-%d");
        break;
      case 'T':
        out += format_time(t, "%H:%M:%S");
        break;
      case 'D':
        out += format_time(t, "%m/%d/%y");
        break;
      case 'R':
        out += format_time(t, "%H:%M");
        break;
      case 'c':
        out += format_time(t, "%a %b %e %H:%M:%S %Y");
        break;
      case 'x':
        out += format_time(t, "%m/%d/%y");
        break;
      case 'X':
        out += format_time(t, "%H:%M:%S");
        break;
      case 'n':
        out += "\n";
        break;
      case 't':
        out += "\t";
        break;
      case '%':
        out += "%";
        break;
      default:
        out.push_back('%');
        if (no_pad) out.push_back('-');
        out.push_back(c);
    }
  }
  return out;
}

// Builds the attribute dict of namespace(...) and dict(...): an optional mapping or
// sequence of pairs, then keyword arguments.
Value build_mapping(Renderer& r, CallArgs& args, const char* fn, DictFlavor flavor) {
  if (args.positional.size() > 1)
    fail(std::string(fn) + "() expected at most 1 positional argument");
  Value out = Value::make_dict();
  out.dict().flavor = flavor;
  if (!args.positional.empty()) {
    const Value& init = args.positional[0];
    if (init.is_dict()) {
      for (const auto& [k, v] : init.dict().entries) out.dict().set(k, v);
    } else {
      for (const Value& pair : iterate(init)) {
        std::vector<Value> kv = iterate(pair);
        if (kv.size() != 2) fail(std::string(fn) + "() sequence elements must be pairs");
        out.dict().set(kv[0], kv[1]);
      }
    }
  }
  for (auto& [k, v] : args.keyword) out.dict().set(Value::string(k), v);
  for (const auto& [k, v] : out.dict().entries) r.note_mutation(out, v);
  return out;
}

Value make_cycler(Renderer&, CallArgs& args) {
  if (!args.keyword.empty()) fail("cycler() takes no keyword arguments");
  if (args.positional.empty()) fail("cycler() requires at least one item");
  auto items = std::make_shared<std::vector<Value>>(args.positional);
  auto pos = std::make_shared<size_t>(0);
  Value obj = Value::make_dict();
  obj.dict().flavor = DictFlavor::Namespace;
  // `current` is refreshed after each call so that cycler.current reads like Jinja2's.
  std::weak_ptr<DictObj> self = obj.dict_ptr();
  obj.dict().set(Value::string("current"), (*items)[0]);
  obj.dict().set(Value::string("next"),
                 Value::function("next", [items, pos, self](Renderer&, CallArgs& a) {
                   BoundArgs(a, "next", {});
                   Value out = (*items)[*pos];
                   *pos = (*pos + 1) % items->size();
                   if (auto d = self.lock()) d->set(Value::string("current"), (*items)[*pos]);
                   return out;
                 }));
  obj.dict().set(Value::string("reset"),
                 Value::function("reset", [items, pos, self](Renderer&, CallArgs& a) {
                   BoundArgs(a, "reset", {});
                   *pos = 0;
                   if (auto d = self.lock()) d->set(Value::string("current"), (*items)[0]);
                   return Value::none();
                 }));
  return obj;
}

Value make_joiner(Renderer&, CallArgs& args) {
  BoundArgs b(args, "joiner", {"sep"});
  std::string sep = b.has(0) ? to_str(b.get(0)) : ", ";
  auto used = std::make_shared<bool>(false);
  return Value::function("joiner", [sep, used](Renderer&, CallArgs& a) {
    BoundArgs(a, "joiner", {});
    if (!*used) {
      *used = true;
      return Value::string("");
    }
    return Value::string(sep);
  });
}

Value make_range(Renderer& r, CallArgs& args) {
  if (!args.keyword.empty()) fail("range() takes no keyword arguments");
  std::vector<int64_t> n;
  for (const Value& v : args.positional) {
    if (!v.is_integral()) fail("'" + type_name(v) + "' object cannot be interpreted as an integer");
    n.push_back(v.as_int());
  }
  if (n.empty() || n.size() > 3)
    fail("range expected 1 to 3 arguments, got " + std::to_string(n.size()));
  int64_t start = n.size() == 1 ? 0 : n[0];
  int64_t stop = n.size() == 1 ? n[0] : n[1];
  int64_t step = n.size() == 3 ? n[2] : 1;
  if (step == 0) fail("range() arg 3 must not be zero");
  // Count in 128 bits: stop - start may overflow int64.
  __int128 span = static_cast<__int128>(stop) - start;
  __int128 count = step > 0 ? (span <= 0 ? 0 : (span - 1) / step + 1)
                            : (span >= 0 ? 0 : (-span - 1) / -static_cast<__int128>(step) + 1);
  if (count > r.limits().max_loop_iterations) {
    fail("range() exceeds the loop iteration limit (" +
         std::to_string(r.limits().max_loop_iterations) + ")");
  }
  int64_t length = static_cast<int64_t>(count);
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) items.push_back(Value::integer(start + i * step));
  return Value::make_list(std::move(items));
}

}  // namespace

Value lookup_global(std::string_view name) {
  using Fn = Value (*)(Renderer&, CallArgs&);
  static const std::pair<std::string_view, Fn> kGlobals[] = {
      {"range", make_range},
      {"namespace",
       [](Renderer& r, CallArgs& a) {
         return build_mapping(r, a, "namespace", DictFlavor::Namespace);
       }},
      {"dict",
       [](Renderer& r, CallArgs& a) { return build_mapping(r, a, "dict", DictFlavor::Plain); }},
      {"raise_exception",
       [](Renderer& r, CallArgs& a) -> Value {
         BoundArgs b(a, "raise_exception", {"message"});
         fail(b.has(0) ? to_str(b.get(0), r.limits().max_output_bytes) : "raise_exception called");
       }},
      {"strftime_now",
       [](Renderer& r, CallArgs& a) {
         BoundArgs b(a, "strftime_now", {"format"}, 1);
         return Value::string(format_time(r.now(), b.get_string(0, "")));
       }},
      {"cycler", make_cycler},
      {"joiner", make_joiner},
  };
  for (const auto& [n, fn] : kGlobals) {
    if (n == name) {
      Fn f = fn;
      return Value::function(std::string(name),
                             [f](Renderer& r, CallArgs& args) { return f(r, args); });
    }
  }
  return Value();
}

}  // namespace strata::chat
