# The two commands of the README:
#   make demo   install what is missing, build (release), run Quiver's main job
#   make test   install what is missing, build, run every test (plain, ASan+UBSan, TSan,
#               fuzz, Python, and the Java modules plain and with the JNI library under ASan)
JOBS ?= $(shell nproc)
BUILD := build

.PHONY: demo test setup setup-java release test-c test-asan test-tsan test-fuzz test-python test-java test-java-asan clean
# Maven, batch mode; MVN="mvn -B -o" builds offline from a warm ~/.m2.
MVN ?= mvn -B

setup:
	@scripts/setup.sh

# setup, and the JDK and Maven (the Java tests, and the JNI library that
# test-c builds); `make demo` does not need them.
setup-java:
	@scripts/setup.sh --java

release: setup
	cmake -S . -B $(BUILD)/release -DCMAKE_BUILD_TYPE=Release -DQV_BUILD_TESTS=OFF
	cmake --build $(BUILD)/release -j$(JOBS)

demo: release
	$(BUILD)/release/cli/qv demo

test: setup-java test-c test-asan test-tsan test-fuzz test-python test-java test-java-asan
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

# The Python package (installed by scripts/setup.sh) and its pytest suite,
# then the benchmark harnesses' own tests (the comparison's report, CPU check
# and datasets, the small real tables loading from their packages; Parquet
# beside bench/run format; a few seconds).
test-python: setup
	python3 -m pytest python/tests -q
	python3 -m pytest bench/compare bench/test_format_parquet.py -q

# The Java modules (java/): the JNI library is built by quiver-jni's Maven
# build with this CMake project, then every module's tests run and the jars
# are made. The first run downloads Spark, Arrow and the Maven plugins
# (about 300 MB into ~/.m2).
test-java: setup-java
	$(MVN) -f java/pom.xml verify

# The JNI library under AddressSanitizer + UBSan, in a Maven build folder of
# its own (java/quiver-jni/target/asan: the jar's library stays a release
# build), with quiver-jni's tests. The JVM is not instrumented, so gcc's ASan
# runtime is preloaded into the test JVMs; leak detection is off (the JVM
# never frees its heap), ASan leaves SIGSEGV to the JVM (which uses it for
# null checks), and errors inside ASan's interceptors called from libjvm.so
# itself are suppressed (java/quiver-jni/src/test/asan.supp says why).
ASAN_RUNTIME = $(shell gcc -print-file-name=libasan.so)
test-java-asan: setup-java
	$(MVN) -f java/pom.xml -pl quiver-jni test \
	    -Dquiver.jni.buildDirectory=$(CURDIR)/java/quiver-jni/target/asan \
	    -Dquiver.native.buildType=Debug -Dquiver.native.sanitize=address \
	    -Dquiver.test.preload=$(ASAN_RUNTIME) \
	    -Dquiver.test.asanOptions=detect_leaks=0:handle_segv=0:allow_user_segv_handler=1:abort_on_error=1:suppressions=$(CURDIR)/java/quiver-jni/src/test/asan.supp

clean:
	rm -rf $(BUILD) java/*/target
