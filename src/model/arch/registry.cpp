#include "model/arch/arch.h"

namespace strata {

const ArchSpec* find_arch(std::string_view name) {
  for (const ArchSpec* spec : {&llama_arch(), &qwen2_arch(), &qwen3_arch()}) {
    if (spec->name == name) return spec;
  }
  return nullptr;
}

}  // namespace strata
