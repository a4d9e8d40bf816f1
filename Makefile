# The whole set-up is two commands (README): `make run` and `make test`.
# Both install the Debian packages kvplan needs when they are missing, then
# configure and build with CMake in build/.

BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PACKAGES := cmake g++ make libcli11-dev nlohmann-json3-dev libfmt-dev catch2
# `make test` also renders the --plot charts to PNG with rsvg-convert (tests/cli/plot_cmd_test.cpp).
TEST_PACKAGES := librsvg2-bin
# `make sanitize` and `make fuzz` build with clang: its UBSan checks float-to-int
# casts (-fsanitize=float-cast-overflow, which GCC's set lacks) and it has libFuzzer.
CLANG_PACKAGES := clang libclang-rt-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

SANITIZE_DIR ?= build-sanitize
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
SANITIZERS := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
export ASAN_OPTIONS ?= halt_on_error=1:detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS ?= halt_on_error=1:print_stacktrace=1

.PHONY: all deps clang-deps build run test bench install release deb dist sanitize fuzz clean

all: build

# Installs the Debian packages in $(1) that are not installed yet.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
endef

deps:
	$(call install_missing,$(PACKAGES))

clang-deps: deps
	$(call install_missing,$(CLANG_PACKAGES))

build: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j $(JOBS)

# A plan for the bundled default model (llama-3.1-8b) on the default GPU (H100
# SXM 80GB) as vLLM computes it, with its start-up log lines. Builds only the
# kvplan binary, one line per stage and per compiled file (the build's output
# is in build/make-run.log, and its tail is shown when it fails).
run: deps
	@scripts/build-progress.sh $(BUILD_DIR) $(JOBS) -DCMAKE_BUILD_TYPE=Release -- kvplan
	@echo "built $(BUILD_DIR)/kvplan ($$($(BUILD_DIR)/kvplan --version)); build log: $(BUILD_DIR)/make-run.log"
	@echo
	@$(BUILD_DIR)/kvplan size --model llama-3.1-8b --context 8192 --batch 32
	@echo
	@$(BUILD_DIR)/kvplan concurrency --model llama-3.1-8b --gpu h100-sxm --engine vllm --context 4096,32768,131072

test: build
	$(call install_missing,$(TEST_PACKAGES))
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# Speed figures (median of repeated runs, ratio to a baseline): see docs/roofline.md.
bench: build
	$(BUILD_DIR)/tests/kvplan_bench 5

# Installs build/kvplan, stripped, with its man page, shell completions,
# licence and docs under PREFIX (default /usr/local): cmake/packaging.cmake.
PREFIX ?= /usr/local
install: deps
	$(call install_missing,help2man)
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j $(JOBS) --target kvplan kvplan_completions kvplan_man
	cmake --install $(BUILD_DIR) --prefix $(PREFIX) --strip

# The portable release build behind `make deb` and `make dist`: fmt,
# libstdc++ and libgcc linked in, so the binary needs only glibc (docs/ci.md).
RELEASE_DIR ?= build-release
RELEASE_PACKAGES := dpkg-dev help2man file
release: deps
	$(call install_missing,$(RELEASE_PACKAGES))
	cmake -S . -B $(RELEASE_DIR) -DCMAKE_BUILD_TYPE=Release -DKVPLAN_PORTABLE=ON -DKVPLAN_CUDA=OFF -DBUILD_TESTING=OFF
	cmake --build $(RELEASE_DIR) -j $(JOBS)

# A Debian package (CPack), in build-release/: `apt-get install ./build-release/kvplan_*.deb`.
deb: release
	cd $(RELEASE_DIR) && cpack -G DEB

# A tarball of the installed tree whose binary runs without libfmt or a
# recent libstdc++; scripts/dist.sh refuses one that links anything but glibc.
dist: release
	scripts/dist.sh $(RELEASE_DIR)

# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer (clang),
# stopping at the first report: docs/errors.md, "Sanitizers and fuzzing".
sanitize: clang-deps
	cmake -S . -B $(SANITIZE_DIR) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Sanitize -DKVPLAN_CUDA=OFF \
	  -DCMAKE_CXX_FLAGS="-O1 -g $(SANITIZERS)" -DCMAKE_EXE_LINKER_FLAGS="$(SANITIZERS)"
	cmake --build $(SANITIZE_DIR) -j $(JOBS)
	cd $(SANITIZE_DIR) && ctest --output-on-failure -j $(JOBS)

# libFuzzer on the config path and the baseline reader, FUZZ_SECONDS each
# (default 60), seeded from the project's configs and baselines (scripts/fuzz.sh).
fuzz: clang-deps
	cmake -S . -B $(FUZZ_DIR) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Fuzz -DKVPLAN_CUDA=OFF -DBUILD_TESTING=OFF \
	  -DKVPLAN_FUZZ=ON -DCMAKE_CXX_FLAGS="-O1 -g -fsanitize=fuzzer-no-link $(SANITIZERS)" -DCMAKE_EXE_LINKER_FLAGS="$(SANITIZERS)"
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzz_config fuzz_baseline fuzz_safetensors fuzz_gguf fuzz_trace
	scripts/fuzz.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR) $(FUZZ_DIR) $(RELEASE_DIR)
