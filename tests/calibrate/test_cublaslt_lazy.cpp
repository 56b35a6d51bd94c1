// cuBLASLt is opened on first use (calibrate/cuda/cublaslt_lazy.cpp), not at start-up: the
// forwarding functions find the library and its functions (built only with CUDA; needs no GPU).
#ifdef CLUSTERSIM_HAVE_CUDA
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

// Declared here rather than through <cublasLt.h>, whose include path the tests do not get;
// the definitions are checked against the header where they are compiled.
extern "C" std::size_t cublasLtGetVersion(void);
extern "C" const char* cublasLtGetStatusString(int status);

TEST_CASE("runner: cuBLASLt is loaded on first use", "[calibrate][runner]") {
    CHECK(cublasLtGetVersion() > 0);
    CHECK_FALSE(std::string(cublasLtGetStatusString(0)).empty()); // "success"
}
#endif
