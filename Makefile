# The two commands of the README:
#   make demo   install what is missing, build (release), run Quiver's main job
#   make test   install what is missing, build, run every test (plain, ASan+UBSan, TSan)
JOBS ?= $(shell nproc)
BUILD := build

.PHONY: demo test setup release test-c test-asan test-tsan test-fuzz test-python clean

setup:
	@scripts/setup.sh

release: setup
	cmake -S . -B $(BUILD)/release -DCMAKE_BUILD_TYPE=Release -DQV_BUILD_TESTS=OFF
	cmake --build $(BUILD)/release -j$(JOBS)

demo: release
	$(BUILD)/release/cli/qv demo

test: setup test-c test-asan test-tsan test-fuzz test-python
	@echo "all tests passed"

# QV_BUILD_JNI: the JNI library is built too, so ctest's check_jni_library
# holds it to its surface (JNI entry points only, libc and libm only).
test-c:
	cmake -S . -B $(BUILD)/debug -DCMAKE_BUILD_TYPE=Debug -DQV_BUILD_BENCH=OFF -DQV_BUNDLED_STATIC=ON -DQV_BUILD_JNI=ON
	cmake --build $(BUILD)/debug -j$(JOBS)
	cd $(BUILD)/debug && ctest --output-on-failure -j$(JOBS)

test-asan:
	cmake -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=Debug -DQV_SANITIZE=address -DQV_BUILD_BENCH=OFF -DQV_BUNDLED_STATIC=ON
	cmake --build $(BUILD)/asan -j$(JOBS)
	cd $(BUILD)/asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS)

test-tsan:
	cmake -S . -B $(BUILD)/tsan -DCMAKE_BUILD_TYPE=Debug -DQV_SANITIZE=thread -DQV_BUILD_BENCH=OFF
	cmake --build $(BUILD)/tsan -j$(JOBS)
	cd $(BUILD)/tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -L concurrency

test-fuzz:
	core/tests/run-fuzz

# The Python package (installed by scripts/setup.sh) and its pytest suite.
test-python: setup
	python3 -m pytest python/tests -q

clean:
	rm -rf $(BUILD)
