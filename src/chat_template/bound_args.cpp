#include "chat_template/builtins.h"

namespace strata::chat {

BoundArgs::BoundArgs(const CallArgs& call, std::string_view fn_name,
                     std::initializer_list<std::string_view> params, size_t required)
    : fn_name_(fn_name), names_(params), bound_(params.size(), nullptr) {
  if (call.positional.size() > names_.size()) {
    fail(fn_name_ + "() takes at most " + std::to_string(names_.size()) + " argument(s) (" +
         std::to_string(call.positional.size()) + " given)");
  }
  for (size_t i = 0; i < call.positional.size(); ++i) bound_[i] = &call.positional[i];
  for (const auto& [key, value] : call.keyword) {
    size_t i = 0;
    while (i < names_.size() && names_[i] != key) ++i;
    if (i == names_.size()) fail(fn_name_ + "() got an unexpected keyword argument '" + key + "'");
    if (bound_[i]) fail(fn_name_ + "() got multiple values for argument '" + key + "'");
    bound_[i] = &value;
  }
  for (size_t i = 0; i < required && i < names_.size(); ++i) {
    if (!bound_[i])
      fail(fn_name_ + "() missing required argument '" + std::string(names_[i]) + "'");
  }
}

const Value& BoundArgs::get(size_t i) const {
  static const Value kUndefined;
  return has(i) ? *bound_[i] : kUndefined;
}

int64_t BoundArgs::get_int(size_t i, int64_t fallback) const {
  if (!has(i) || get(i).is_none()) return fallback;
  const Value& v = get(i);
  if (!v.is_integral()) {
    fail(fn_name_ + "() argument '" + std::string(names_[i]) + "' must be an integer, not " +
         type_name(v));
  }
  return v.as_int();
}

bool BoundArgs::get_bool(size_t i, bool fallback) const {
  return has(i) ? truthy(get(i)) : fallback;
}

std::string BoundArgs::get_string(size_t i, std::string fallback) const {
  if (!has(i)) return fallback;
  const Value& v = get(i);
  if (!v.is_string()) {
    fail(fn_name_ + "() argument '" + std::string(names_[i]) + "' must be a string, not " +
         type_name(v));
  }
  return v.str();
}

}  // namespace strata::chat
