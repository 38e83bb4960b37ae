#include "model/arch/arch.h"

namespace strata {

const ArchSpec* find_arch(std::string_view name) {
  for (const ArchSpec* spec : {&llama_arch(), &qwen2_arch(), &qwen3_arch(), &qwen2moe_arch(),
                               &qwen3moe_arch(), &deepseek2_arch()}) {
    if (spec->name == name) return spec;
  }
  return nullptr;
}

}  // namespace strata
