# Builds the libFuzzer targets (clang, ASan + UBSan) into $(OUT). Each library source is
# compiled once into $(OUT)/obj (with -fsanitize=fuzzer-no-link) and shared by the targets
# that need it; -MMD keeps rebuilds incremental. Used by scripts/fuzz-smoke.sh:
#   make -f tests/fuzz/fuzz.mk -j2 OUT=build-fuzz FUZZ_CXX=clang++
OUT ?= build-fuzz
FUZZ_CXX ?= clang++
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
CXXFLAGS := -std=c++20 -g -O1 $(SAN) -Isrc -Iinclude
# The targets themselves are -Werror clean; library code is checked by the main build.
WARN = $(if $(filter tests/fuzz/%,$(1)),-Wall -Wextra -Werror)
OBJ := $(OUT)/obj

# Library sources per target (the fuzz target's own .cpp is added below).
CORE := $(wildcard src/core/*.cpp)
GGUF := $(wildcard src/gguf/*.cpp)
TOKENIZER := $(wildcard src/tokenizer/*.cpp)
TEMPLATE := $(wildcard src/chat_template/*.cpp)
GRAMMAR := $(wildcard src/grammar/*.cpp)
SERVER := src/server/api_error.cpp src/server/json_fields.cpp src/server/request_parse.cpp \
          src/server/prompt_builder.cpp src/server/control_text_guard.cpp \
          src/server/tool_calls.cpp \
          src/engine/output_processor.cpp src/engine/request_validation.cpp
MODEL := src/model/config.cpp src/model/weights.cpp $(wildcard src/model/arch/*.cpp) \
         $(wildcard src/kernels/quant/*.cpp)

SRCS_tokenizer_fuzz := $(TOKENIZER) $(GGUF) $(CORE)
SRCS_chat_template_fuzz := $(TEMPLATE) $(CORE)
SRCS_http_request_fuzz := $(SERVER) $(GRAMMAR) $(TOKENIZER) $(TEMPLATE) $(GGUF) $(CORE)
SRCS_gguf_file_fuzz := $(MODEL) $(TOKENIZER) $(GGUF) $(CORE)
LIBS_tokenizer_fuzz := -lpcre2-8
LIBS_http_request_fuzz := -lpcre2-8
LIBS_gguf_file_fuzz := -lpcre2-8

TARGETS := tokenizer_fuzz chat_template_fuzz http_request_fuzz gguf_file_fuzz
all: $(addprefix $(OUT)/,$(TARGETS))

obj = $(patsubst %.cpp,$(OBJ)/%.o,$(1))

# The kernels' instruction-set variants, as CMakeLists.txt compiles them.
ISA_avx2 := -mavx2 -mfma -mf16c
ISA_avx512 := $(ISA_avx2) -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni
ISA_avx512bf16 := $(ISA_avx512) -mavx512bf16
ISA_avxvnni := $(ISA_avx2) -mavxvnni
isa = $(if $(filter %_avx512bf16.cpp,$(1)),$(ISA_avx512bf16),$(if $(filter %_avx512.cpp,$(1)),$(ISA_avx512),$(if $(filter %_avxvnni.cpp,$(1)),$(ISA_avxvnni),$(if $(filter %_avx2.cpp,$(1)),$(ISA_avx2)))))

# clang 14 lacks __builtin_cpu_supports("f16c"), which traits.cpp asks (see the shim).
SHIM_src/kernels/quant/traits.cpp := -include tests/fuzz/cpu_supports_shim.h

$(OBJ)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(CXXFLAGS) $(call WARN,$<) $(call isa,$<) $(SHIM_$<) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

define target_rule
$(OUT)/$(1): $(call obj,tests/fuzz/$(1).cpp $(SRCS_$(1)))
	$(FUZZ_CXX) $(CXXFLAGS) -fsanitize=fuzzer $$^ $(LIBS_$(1)) -o $$@
endef
$(foreach t,$(TARGETS),$(eval $(call target_rule,$(t))))

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)

.PHONY: all
