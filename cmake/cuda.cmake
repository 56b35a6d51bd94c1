# CLUSTERSIM_WITH_CUDA: AUTO builds the calibration runners when a CUDA compiler, cuBLAS and
# NCCL are all found; ON insists on them; OFF skips them. The result is CLUSTERSIM_HAVE_CUDA.
set(CLUSTERSIM_HAVE_CUDA OFF)
if(NOT CLUSTERSIM_WITH_CUDA STREQUAL "OFF")
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
        if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
            # A100 (sm_80) and H100/H200 (sm_90): the GPUs the presets describe.
            set(CMAKE_CUDA_ARCHITECTURES 80 90)
        endif()
        enable_language(CUDA)
        find_package(CUDAToolkit)
        find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME
                  PATH_SUFFIXES include)
        find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME
                     PATH_SUFFIXES lib lib64)
        if(CUDAToolkit_FOUND AND TARGET CUDA::cublas AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
            set(CLUSTERSIM_HAVE_CUDA ON)
            add_library(clustersim_nccl INTERFACE)
            target_include_directories(clustersim_nccl SYSTEM INTERFACE ${NCCL_INCLUDE_DIR})
            target_link_libraries(clustersim_nccl INTERFACE ${NCCL_LIBRARY})
        endif()
    endif()
    if(CLUSTERSIM_WITH_CUDA STREQUAL "ON" AND NOT CLUSTERSIM_HAVE_CUDA)
        message(FATAL_ERROR "CLUSTERSIM_WITH_CUDA=ON but the CUDA compiler, cuBLAS or NCCL was not found")
    endif()
endif()
message(STATUS "clustersim: CUDA calibration runners: ${CLUSTERSIM_HAVE_CUDA}")
