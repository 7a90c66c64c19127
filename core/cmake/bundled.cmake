# The bundled static library (QV_BUNDLED_STATIC=ON): libquiver_bundled.a =
# libquiver + zstd + lz4 + xxHash, every object position-independent and
# every symbol hidden except the QV_API functions, for linking into a shared
# library that must stand alone (the JNI library in the jar, an extension in
# a wheel): such a library then needs only libc, libm and libpthread.
#
# Debian's libzstd.a is not position-independent, so zstd and lz4 are
# compiled here from their sources, fetched by scripts/fetch-bundled-sources
# from pinned, hash-checked PyPI source distributions into
# QV_BUNDLED_SOURCES (run on demand; nothing is vendored in the repository).
# xxHash is compiled into base/hash.c from xxhash.h (XXH_INLINE_ALL).
#
# Consumers link the target quiver_bundled; it carries
# -Wl,--exclude-libs,libquiver_bundled.a, so even the QV_API functions stay
# inside the consumer's shared object unless it exports them on purpose.

set(QV_BUNDLED_SOURCES "${PROJECT_SOURCE_DIR}/build/bundled-src" CACHE PATH
    "Where scripts/fetch-bundled-sources unpacks the zstd and lz4 sources")
execute_process(COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/fetch-bundled-sources ${QV_BUNDLED_SOURCES}
                RESULT_VARIABLE qv_fetch_rc)
if(NOT qv_fetch_rc EQUAL 0)
  message(FATAL_ERROR "QV_BUNDLED_STATIC: scripts/fetch-bundled-sources failed (${qv_fetch_rc})")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/scripts/bundled-sources.txt)

set(QV_ZSTD_DIR ${QV_BUNDLED_SOURCES}/zstd/lib)
set(QV_LZ4_DIR ${QV_BUNDLED_SOURCES}/lz4)
# Each library's own visibility macro set to nothing, so -fvisibility=hidden
# decides: hidden. Only single-threaded zstd (no ZSTD_MULTITHREAD): the
# library calls the one-shot API, and the result needs no libpthread of zstd.
# ZSTD_ASAN_DONT_POISON_WORKSPACE: under AddressSanitizer zstd poisons the
# unused parts of a compression context's workspace and leaves it to the
# allocator's free to clear that; ours (zstd_mem.c: the encoder's arena over
# the pool's block cache) hands the block to the next user instead, who then
# hits zstd's poison (the JNI library's ASan run: a scratch chunk of
# 65,600 bytes written at offset 8, "use-after-poison"). Only ASan builds of
# the bundled zstd change.
set(QV_BUNDLED_DEFS ZSTDLIB_VISIBLE= ZSTDLIB_HIDDEN= ZSTDERRORLIB_VISIBLE= LZ4LIB_VISIBILITY=
    ZSTD_ASAN_DONT_POISON_WORKSPACE=1)

file(GLOB QV_ZSTD_SOURCES ${QV_ZSTD_DIR}/common/*.c ${QV_ZSTD_DIR}/compress/*.c
     ${QV_ZSTD_DIR}/decompress/*.c ${QV_ZSTD_DIR}/decompress/*.S)
add_library(qv_bundled_codecs OBJECT ${QV_ZSTD_SOURCES} ${QV_LZ4_DIR}/lz4.c)
target_include_directories(qv_bundled_codecs PRIVATE ${QV_ZSTD_DIR} ${QV_ZSTD_DIR}/common ${QV_LZ4_DIR})
target_compile_definitions(qv_bundled_codecs PRIVATE ${QV_BUNDLED_DEFS})
# Their code, their warnings: -w keeps the project's -Werror from judging it.
target_compile_options(qv_bundled_codecs PRIVATE -fvisibility=hidden -w
                       $<$<COMPILE_LANGUAGE:C>:-O2>)

# The library's own sources once more, against the bundled headers and with
# xxHash inline.
add_library(quiver_bundled_objects OBJECT ${QV_SOURCES})
target_include_directories(quiver_bundled_objects BEFORE
  PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
  PRIVATE ${QV_ZSTD_DIR} ${QV_LZ4_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/src ${XXHASH_INCLUDE_DIR})
# The fetched zstd sources carry no dictionary builder (lib/dictBuilder):
# QV_NO_ZDICT makes zstd_dict write frames without a trained dictionary
# (decoding is the same everywhere).
target_compile_definitions(quiver_bundled_objects PRIVATE QV_BUILDING_LIBRARY QV_XXHASH_INLINE
                           QV_NO_ZDICT ${QV_BUNDLED_DEFS})
target_compile_options(quiver_bundled_objects PRIVATE -fvisibility=hidden)

add_library(quiver_bundled STATIC $<TARGET_OBJECTS:quiver_bundled_objects>
            $<TARGET_OBJECTS:qv_bundled_codecs>)
set_target_properties(quiver_bundled PROPERTIES OUTPUT_NAME quiver_bundled)
target_include_directories(quiver_bundled PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
target_link_libraries(quiver_bundled INTERFACE Threads::Threads m)
target_link_options(quiver_bundled INTERFACE -Wl,--exclude-libs,libquiver_bundled.a)
install(TARGETS quiver_bundled)
