# The whole set-up is two commands (README): `make run` and `make test`.
# Both install the Debian packages kvplan needs when they are missing, then
# configure and build with CMake in build/.

BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PACKAGES := cmake g++ make libcli11-dev nlohmann-json3-dev libfmt-dev catch2
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps build run test bench clean

all: build

deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD_DIR) -j $(JOBS)

# A plan for the bundled default model (llama-3.1-8b) on the default GPU (H100 SXM 80GB).
run: build
	$(BUILD_DIR)/kvplan size --model llama-3.1-8b --context 8192 --batch 32
	$(BUILD_DIR)/kvplan concurrency --model llama-3.1-8b --gpu h100-sxm --context 4096,32768,131072

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# Speed figures (median of repeated runs, ratio to a baseline): see docs/roofline.md.
bench: build
	$(BUILD_DIR)/tests/kvplan_bench 5

clean:
	rm -rf $(BUILD_DIR)
