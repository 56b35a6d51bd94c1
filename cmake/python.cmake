# CLUSTERSIM_WITH_PYTHON: AUTO builds the `clustersim` Python module (python/) when Python's
# headers and pybind11 are found (Debian's python3-dev and pybind11-dev); ON insists; OFF skips.
# The result is CLUSTERSIM_HAVE_PYTHON.
#
# Never in the sanitizer build: an ASan-instrumented module loads only into an interpreter
# started with the ASan runtime preloaded, and the interpreter's own allocations then flood the
# leak check. The module's C++ is the libraries the sanitized Catch2 tests already run; the
# normal build tests the binding itself with pytest.
set(CLUSTERSIM_HAVE_PYTHON OFF)
if(CLUSTERSIM_SANITIZE)
    message(STATUS "clustersim: Python module: OFF (not built under the sanitizers)")
    return()
endif()
if(NOT CLUSTERSIM_WITH_PYTHON STREQUAL "OFF")
    # Debian's interpreter, the one scripts/install-deps.sh installs pytest and pandas for; an
    # interpreter earlier on the PATH (pyenv, a virtualenv) may lack them. -DPython3_EXECUTABLE
    # picks another (the module is built for that interpreter's version).
    if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
        set(Python3_EXECUTABLE /usr/bin/python3)
    endif()
    find_package(Python3 3.8 COMPONENTS Interpreter Development.Module QUIET)
    if(Python3_FOUND)
        # With Python3 found first, pybind11 builds for that interpreter (its FindPython mode).
        find_package(pybind11 2.6 CONFIG QUIET)
    endif()
    if(Python3_FOUND AND pybind11_FOUND)
        set(CLUSTERSIM_HAVE_PYTHON ON)
    elseif(CLUSTERSIM_WITH_PYTHON STREQUAL "ON")
        message(FATAL_ERROR "CLUSTERSIM_WITH_PYTHON=ON but Python's headers or pybind11 were not "
                            "found (apt-get install python3-dev pybind11-dev)")
    endif()
endif()
if(CLUSTERSIM_HAVE_PYTHON)
    message(STATUS "clustersim: Python module: ON (Python ${Python3_VERSION}, pybind11 ${pybind11_VERSION})")
else()
    message(STATUS "clustersim: Python module: OFF")
endif()
