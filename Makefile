# The two commands a newcomer needs:
#   make serve  install what is missing, build (Release), convert the bundled tiny real
#               model to GGUF and serve it over the OpenAI API on 127.0.0.1:8080
#   make test   install what is missing, build, run the whole test suite
# (make demo generates text from the command line instead of serving.)
SHARED ?= $(abspath ../shared)
BUILD ?= build
JOBS ?= $(shell nproc)
PROMPT ?= Once upon a time

.PHONY: deps build demo serve test fuzz-smoke fuzz asan asan-gguf clean format format-check

deps:
	@bash scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_SHARED_DIR=$(SHARED)
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD)/aidreams260K.gguf: build
	$(BUILD)/strata convert llama2c $(SHARED)/models/aidreams260K.bin \
	    $(SHARED)/models/aidreams260K.tok512.bin $@

demo: $(BUILD)/aidreams260K.gguf
	$(BUILD)/strata run -m $(BUILD)/aidreams260K.gguf -p "$(PROMPT)" -n 100 --temp 0

# The main job: build, convert the bundled tiny real model and serve it over the OpenAI
# API on $(HOST):$(PORT) in the foreground (Ctrl-C stops it).
HOST ?= 127.0.0.1
PORT ?= 8080
serve: $(BUILD)/aidreams260K.gguf
	$(BUILD)/strata serve -m $(BUILD)/aidreams260K.gguf --host $(HOST) --port $(PORT)

test: build
	cd $(BUILD) && ctest -j $(JOBS) --output-on-failure

# clang-format: check every tracked C++ file (CI runs this), or rewrite them.
format-check: deps
	bash scripts/check-format.sh
format:
	bash scripts/check-format.sh --fix

# libFuzzer targets (tokenizer, chat templates, HTTP requests, GGUF files) under
# ASan/UBSan: `fuzz-smoke` is CI's bounded run (about a minute each, fresh corpora);
# `fuzz` runs each for FUZZ_SECONDS (default 600) and keeps the corpora it grows in
# build-fuzz/corpus-* for the next run (docs/FUZZING.md).
fuzz-smoke: deps
	bash scripts/fuzz-smoke.sh

fuzz: deps
	FUZZ_SECONDS=$${FUZZ_SECONDS:-600} FUZZ_KEEP_CORPUS=1 bash scripts/fuzz-smoke.sh

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer.
asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_SANITIZE=ON \
	    -DSTRATA_BUILD_BENCH=OFF -DSTRATA_SHARED_DIR=$(SHARED)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest -j $(JOBS) --output-on-failure

clean:
	rm -rf $(BUILD) build-asan

# The GGUF reader's hostile-file tests under ASan/UBSan (a quick subset of `make asan`
# that CI runs: the parser is the code that reads untrusted bytes first).
asan-gguf: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_SANITIZE=ON \
	    -DSTRATA_BUILD_BENCH=OFF -DSTRATA_SHARED_DIR=$(SHARED)
	cmake --build build-asan -j $(JOBS) --target test_gguf
	build-asan/tests/test_gguf
