# arcprof: thin wrapper over CMake/Ninja. See README.md.
BUILD ?= build
CMAKE_FLAGS ?=
CC := clang
CXX := clang++
export CC CXX

.PHONY: all deps configure build run test bench fuzz format clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja:
	@scripts/install-deps.sh
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: deps configure
	cmake --build $(BUILD)

# The main job: profile the machine while a bundled workload runs, print the
# report, write a flame graph.
run: build
	@scripts/run-demo.sh $(BUILD)

test: build
	@scripts/run-tests.sh $(BUILD)

bench: build
	@scripts/run-bench.sh $(BUILD)

format:
	@git ls-files '*.cc' '*.cpp' '*.h' '*.c' | grep -v '^vmlinux/' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
