# Sourced by scripts/test.sh --sanitize and scripts/fuzz.sh: configures the sanitizer build
# (build/asan) and sets $asan_dir. Both scripts then build in the same directory, so CI
# compiles the libraries for ASan+UBSan once, for the tests and the fuzzers together.
#   Debug, AddressSanitizer + UBSan, warnings are errors, no CUDA runners (the normal build
#   compiles them) and no benchmarks. With clang++ installed it is compiled by clang, which
#   builds it about twice as fast as GCC does, checks the code with a second compiler's
#   warnings, and is what libFuzzer needs, so the fuzz targets are part of it.
#   Debug info is line tables only (-g1, clang's -gline-tables-only): all that a sanitizer's
#   or libFuzzer's stack trace needs to name files and lines, and the libraries compile up to
#   a quarter faster and link smaller than with -g (local variables are left out).
asan_dir=build/asan
#   A unity build, as scripts/test.sh's (it says why).
asan_flags=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCLUSTERSIM_WERROR=ON
            -DCLUSTERSIM_SANITIZE=ON -DCLUSTERSIM_WITH_CUDA=OFF -DCLUSTERSIM_BUILD_BENCH=OFF
            -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8)
if command -v clang++ >/dev/null; then
  asan_flags+=(-DCMAKE_CXX_COMPILER=clang++ -DCLUSTERSIM_BUILD_FUZZ=ON)
  asan_cxx=$(command -v clang++)
else
  asan_flags+=(-DCLUSTERSIM_BUILD_FUZZ=OFF)
  asan_cxx=$(command -v "${CXX:-c++}")
fi
# A directory configured with the other compiler starts over (CMake cannot switch in place).
cached_cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$asan_dir/CMakeCache.txt" 2>/dev/null || true)
if [ -n "$cached_cxx" ] && [ "$(realpath "$(command -v "$cached_cxx" || echo "$cached_cxx")")" != \
                             "$(realpath "$asan_cxx")" ]; then
  echo "sanitize-config: $asan_dir was configured with $cached_cxx; starting it over" >&2
  rm -rf "$asan_dir"
fi
cmake -S . -B "$asan_dir" "${asan_flags[@]}" >/dev/null
