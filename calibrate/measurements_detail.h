#pragma once
/// \file
/// What the files of measurements.h's implementation share, internal to calibrate/: the names
/// of the enums and choices a measurement file uses, and how a step setting's value is
/// written. measurements.cpp holds the names and derived quantities,
/// measurements_settings.cpp the step settings (the experiment file's key tables),
/// measurements_write.cpp the writer, measurements_read.cpp the reader and
/// measurements_check.cpp the checks across entries and the merge.

#include "base/text.h"
#include "calibrate/measurements.h"

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::calibrate::measurements_detail {

inline constexpr std::array<std::string_view, 4> kCopyKindNames{
    "device_to_device", "host_to_device", "device_to_host", "peer"};
inline constexpr std::array<std::string_view, 2> kCopyMethodNames{"kernel", "memcpy"};
inline constexpr std::array<std::string_view, 3> kLaunchMethodNames{
    "host_submit", "gpu_back_to_back", "launch_and_sync"};
/// NCCL's algorithm names (NCCL_ALGO), lower case, plus our hierarchical composition.
inline constexpr std::array<std::string_view, 9> kAlgorithms{
    "ring",           "tree",          "direct", "nvls",        "nvls_tree",
    "collnet_direct", "collnet_chain", "pat",    "hierarchical"};
inline constexpr std::array<std::string_view, 4> kLayouts{"NN", "NT", "TN", "TT"};
inline constexpr std::array<std::string_view, kKernelClassCount> kKernelClassNames{
    "gemm", "attention", "elementwise", "collective", "copy", "other"};
inline constexpr std::array<std::string_view, 4> kPhases{"", "forward", "backward", "optimizer"};

template <std::size_t N>
std::string join(const std::array<std::string_view, N>& names) {
    return base::join(std::vector<std::string>(names.begin(), names.end()), ", ");
}

template <typename E, std::size_t N>
std::optional<E> find_name(const std::array<std::string_view, N>& names, std::string_view text) {
    for (std::size_t i = 0; i < N; ++i) {
        if (names[i] == text)
            return static_cast<E>(i);
    }
    return std::nullopt;
}

/// A step setting's value as an error message or a settings key writes it: true/false,
/// 'text', or the number.
std::string describe(const SettingValue& v);

} // namespace clustersim::calibrate::measurements_detail
