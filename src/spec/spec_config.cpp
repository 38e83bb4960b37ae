#include "spec/spec_config.h"

namespace strata {

std::optional<SpecMethod> parse_spec_method(std::string_view name) {
  if (name == "none") return SpecMethod::kNone;
  if (name == "ngram") return SpecMethod::kNgram;
  if (name == "draft") return SpecMethod::kDraftModel;
  if (name == "early-exit") return SpecMethod::kEarlyExit;
  return std::nullopt;
}

std::string_view spec_method_name(SpecMethod method) {
  switch (method) {
    case SpecMethod::kNgram:
      return "ngram";
    case SpecMethod::kDraftModel:
      return "draft";
    case SpecMethod::kEarlyExit:
      return "early-exit";
    case SpecMethod::kNone:
      break;
  }
  return "none";
}

}  // namespace strata
