#pragma once
/// \file
/// Long lines from short inputs, for the fuzzers (scripts/fuzz.sh caps inputs at 4 KiB, and
/// the crashes of long lines needed 50,000 characters): in an input, the byte 0x7F followed by
/// a byte `c` stands for kStretchRun copies of `c`. At most kMostStretches runs are expanded
/// (1 MiB), so an input still costs milliseconds. The corpus keeps such inputs (a line of
/// 65,536 spaces is 3 bytes in it), and the unit tests replay the corpus through the same
/// function (tests/calibrate/test_long_lines.cpp).

#include <cstddef>
#include <string>
#include <string_view>

namespace clustersim::fuzz {

inline constexpr char kStretchMark = '\x7f';
inline constexpr std::size_t kStretchRun = 65536;
inline constexpr int kMostStretches = 16;

inline std::string stretch(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    int runs = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] == kStretchMark && i + 1 < in.size() && runs < kMostStretches) {
            out.append(kStretchRun, in[i + 1]);
            ++runs;
            ++i;
        } else {
            out += in[i];
        }
    }
    return out;
}

} // namespace clustersim::fuzz
