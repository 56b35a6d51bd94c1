// cuBLASLt, loaded on first use instead of when the program starts.
//
// libcublasLt is over 500 MB and its static initialisers take about 0.4 s of CPU in every
// process that links it, which every test process (and every `clustersim` command) paid
// although only `calibrate run` on a GPU calls it. The runners call the cuBLASLt functions
// below as usual; these definitions (checked against <cublasLt.h>'s declarations) open the
// library with dlopen the first time one is called and forward to it. A machine without the
// library gets a DeviceFailure naming it at that point rather than a program that does not start.
#include "calibrate/runner.h"

#include <cublasLt.h>
#include <dlfcn.h>
#include <fmt/format.h>

namespace {

void* library() {
    static void* const handle = [] {
        // The soname first (found like a linked library: RUNPATH, ld.so.conf), then the file
        // CMake found at build time.
        void* h = dlopen(CLUSTERSIM_CUBLASLT_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (h == nullptr)
            h = dlopen(CLUSTERSIM_CUBLASLT_PATH, RTLD_NOW | RTLD_LOCAL);
        return h;
    }();
    if (handle == nullptr)
        throw clustersim::calibrate::DeviceFailure(
            fmt::format("cannot load cuBLASLt ({} or {}): {}", CLUSTERSIM_CUBLASLT_SONAME,
                        CLUSTERSIM_CUBLASLT_PATH, dlerror()));
    return handle;
}

void* symbol(const char* name) {
    void* const f = dlsym(library(), name);
    if (f == nullptr)
        throw clustersim::calibrate::DeviceFailure(
            fmt::format("{} not found in {}", name, CLUSTERSIM_CUBLASLT_SONAME));
    return f;
}

} // namespace

// The function `name` of the library, as a pointer of the type <cublasLt.h> declares.
#define CLUSTERSIM_CUBLASLT(name)                                                                  \
    static const auto real = reinterpret_cast<decltype(&name)>(symbol(#name))

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle) {
    CLUSTERSIM_CUBLASLT(cublasLtCreate);
    return real(lightHandle);
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
    CLUSTERSIM_CUBLASLT(cublasLtDestroy);
    return real(lightHandle);
}

const char* cublasLtGetStatusString(cublasStatus_t status) {
    CLUSTERSIM_CUBLASLT(cublasLtGetStatusString);
    return real(status);
}

size_t cublasLtGetVersion(void) {
    CLUSTERSIM_CUBLASLT(cublasLtGetVersion);
    return real();
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                              const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                              const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                              const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                              void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
    CLUSTERSIM_CUBLASLT(cublasLtMatmul);
    return real(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
                workspace, workspaceSizeInBytes, stream);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount) {
    CLUSTERSIM_CUBLASLT(cublasLtMatmulAlgoGetHeuristic);
    return real(lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference,
                requestedAlgoCount, heuristicResultsArray, returnAlgoCount);
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc,
                                        cublasComputeType_t computeType, cudaDataType_t scaleType) {
    CLUSTERSIM_CUBLASLT(cublasLtMatmulDescCreate);
    return real(matmulDesc, computeType, scaleType);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
    CLUSTERSIM_CUBLASLT(cublasLtMatmulDescDestroy);
    return real(matmulDesc);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t sizeInBytes) {
    CLUSTERSIM_CUBLASLT(cublasLtMatmulDescSetAttribute);
    return real(matmulDesc, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
    CLUSTERSIM_CUBLASLT(cublasLtMatmulPreferenceCreate);
    return real(pref);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
    CLUSTERSIM_CUBLASLT(cublasLtMatmulPreferenceDestroy);
    return real(pref);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t sizeInBytes) {
    CLUSTERSIM_CUBLASLT(cublasLtMatmulPreferenceSetAttribute);
    return real(pref, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
    CLUSTERSIM_CUBLASLT(cublasLtMatrixLayoutCreate);
    return real(matLayout, type, rows, cols, ld);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
    CLUSTERSIM_CUBLASLT(cublasLtMatrixLayoutDestroy);
    return real(matLayout);
}

} // extern "C"
