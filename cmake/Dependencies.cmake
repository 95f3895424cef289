# Locates the CUDA runtime and cuDNN headers (never their libraries: the shim resolves the real
# libraries at run time) and the Debian-packaged libraries the analyzer and tests use.
#
# Users with other layouts point at theirs with -DCUDAToolkit_ROOT=..., -DCUDNN_ROOT=... or the
# CUDA_HOME / CUDNN_ROOT environment variables.

if(NOT CUDAToolkit_ROOT AND DEFINED ENV{CUDA_HOME})
  set(CUDAToolkit_ROOT $ENV{CUDA_HOME})
endif()
find_package(CUDAToolkit 12.0)
find_path(CUDART_INCLUDE_DIR cuda_runtime_api.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT}/include $ENV{CUDA_HOME}/include /usr/local/cuda/include)
if(NOT CUDART_INCLUDE_DIR)
  message(FATAL_ERROR "cuda_runtime_api.h not found. Install the CUDA Toolkit (13.x) headers, or "
                      "point at them with -DCUDAToolkit_ROOT=/path/to/cuda or CUDA_HOME=/path/to/cuda.")
endif()

set(CUDNN_ROOT "$ENV{CUDNN_ROOT}" CACHE PATH "cuDNN installation prefix (headers in include/)")
find_path(CUDNN_INCLUDE_DIR cudnn_backend.h
  HINTS ${CUDNN_ROOT}/include ${CUDART_INCLUDE_DIR} /usr/include /usr/include/x86_64-linux-gnu)
if(NOT CUDNN_INCLUDE_DIR)
  message(FATAL_ERROR "cudnn_backend.h (cuDNN 9 headers) not found. Install cuDNN 9 headers, or point at "
                      "them with -DCUDNN_ROOT=/path/to/cudnn or the CUDNN_ROOT environment variable.")
endif()
message(STATUS "CUDA runtime headers: ${CUDART_INCLUDE_DIR}; cuDNN headers: ${CUDNN_INCLUDE_DIR}")

# The real libraries, for tests that run against them where they work without a GPU.
find_library(CUDART_REAL_LIBRARY NAMES libcudart.so.13 cudart
  HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_ROOT}/lib64 /usr/local/cuda/lib64 NO_CACHE)
find_library(CUBLASLT_REAL_LIBRARY NAMES libcublasLt.so.13 cublasLt
  HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_ROOT}/lib64 /usr/local/cuda/lib64 NO_CACHE)
find_library(CUDNN_REAL_LIBRARY NAMES libcudnn.so.9 cudnn
  HINTS ${CUDNN_ROOT}/lib ${CUDNN_ROOT}/lib64 ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 NO_CACHE)

add_library(cuprobe_cuda_headers INTERFACE)
target_include_directories(cuprobe_cuda_headers SYSTEM INTERFACE ${CUDART_INCLUDE_DIR} ${CUDNN_INCLUDE_DIR})

find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
# The option parser of every `cuprobe` subcommand (cli/options.cpp); header-only.
find_package(CLI11 2.1 REQUIRED)
# SQLite (cuprobe export --format sqlite), linked statically where the static library exists, so
# that the cuprobe binary runs on machines without libsqlite3 (GPU nodes, containers).
find_library(CUPROBE_SQLITE_STATIC NAMES libsqlite3.a)
if(CUPROBE_SQLITE_STATIC AND NOT SQLite3_LIBRARY)
  set(SQLite3_LIBRARY ${CUPROBE_SQLITE_STATIC} CACHE FILEPATH "SQLite library (static)")
endif()
find_package(SQLite3 REQUIRED)
# libdw and libelf (elfutils): file:line and inlined frames for the offline symbolizer
# (analyzer/trace/symbolize.cpp), read in process instead of running addr2line. Always the static
# archives, so that the static `cuprobe` needs nothing at run time, and their compression
# libraries after them: zlib always; zstd, xz and bzip2 where this elfutils build uses them (the
# linker takes only what is referenced; Debian 12's libelf reads zlib-compressed sections only).
find_path(LIBDW_INCLUDE_DIR elfutils/libdw.h)
find_library(LIBDW_STATIC NAMES libdw.a)
find_library(LIBELF_STATIC NAMES libelf.a)
find_library(ZLIB_STATIC NAMES libz.a)
if(NOT LIBDW_INCLUDE_DIR OR NOT LIBDW_STATIC OR NOT LIBELF_STATIC OR NOT ZLIB_STATIC)
  message(FATAL_ERROR "libdw, libelf and zlib static libraries not found (libdw.a: ${LIBDW_STATIC}, libelf.a: "
                      "${LIBELF_STATIC}, libz.a: ${ZLIB_STATIC}). Install libdw-dev and zlib1g-dev (scripts/deps.sh).")
endif()
add_library(cuprobe_libdw INTERFACE)
target_include_directories(cuprobe_libdw SYSTEM INTERFACE ${LIBDW_INCLUDE_DIR})
target_link_libraries(cuprobe_libdw INTERFACE ${LIBDW_STATIC} ${LIBELF_STATIC})
foreach(lib zstd lzma bz2)
  find_library(CUPROBE_${lib}_STATIC NAMES lib${lib}.a)
  if(CUPROBE_${lib}_STATIC)
    target_link_libraries(cuprobe_libdw INTERFACE ${CUPROBE_${lib}_STATIC})
  endif()
endforeach()
target_link_libraries(cuprobe_libdw INTERFACE ${ZLIB_STATIC} Threads::Threads)
# zstd (libzstd-dev): `cuprobe pack` and every reader of packed traces and facts files
# (analyzer/trace/zstd_io.cpp). The static archive, as for libdw: the static `cuprobe` carries it.
find_path(ZSTD_INCLUDE_DIR zstd.h)
if(NOT ZSTD_INCLUDE_DIR OR NOT CUPROBE_zstd_STATIC)
  message(FATAL_ERROR "libzstd static library or zstd.h not found (libzstd.a: ${CUPROBE_zstd_STATIC}). Install "
                      "libzstd-dev (scripts/deps.sh).")
endif()
add_library(cuprobe_zstd INTERFACE)
target_include_directories(cuprobe_zstd SYSTEM INTERFACE ${ZSTD_INCLUDE_DIR})
target_link_libraries(cuprobe_zstd INTERFACE ${CUPROBE_zstd_STATIC} Threads::Threads)
if(CUPROBE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(CUPROBE_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
