# arcprof: thin wrapper over CMake/Ninja. See README.md.
BUILD ?= build
CMAKE_FLAGS ?=
CC := clang
CXX := clang++
export CC CXX

.PHONY: all deps configure build run test bench fuzz format clean install

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
# report, write a flame graph. Builds only what the demo runs (arcprof, the
# JVMTI agent it loads into JVMs, the bundled workload), not the tests.
DEMO_TARGETS := arcprof arcprof_jvmti ground_truth_program
run: deps configure
	cmake --build $(BUILD) --target $(DEMO_TARGETS)
	@scripts/run-demo.sh $(BUILD)

test: build
	@scripts/run-tests.sh $(BUILD)

# Every libFuzzer target for FUZZ_SECONDS each (default 600; FUZZ_ONLY=REGEX
# picks some); report in $(BUILD)/fuzz-report.txt. See docs/performance.md.
FUZZ_SECONDS ?= 600
FUZZ_ONLY ?= .
fuzz: build
	@scripts/run-fuzz.sh $(BUILD) $(FUZZ_SECONDS) '$(FUZZ_ONLY)'

bench: build
	@scripts/run-bench.sh $(BUILD)

# Installs arcprof, its JVMTI agent and packaging/arcprof.service under
# PREFIX (default /usr/local; docs/continuous.md). DESTDIR is honoured.
PREFIX ?= /usr/local
install: deps configure
	cmake --build $(BUILD) --target arcprof arcprof_jvmti
	cmake --install $(BUILD) --prefix $(PREFIX)

format:
	@git ls-files '*.cc' '*.cpp' '*.h' '*.c' | grep -v '^vmlinux/' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
