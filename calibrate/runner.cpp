#include "calibrate/runner.h"

#include "calibrate/import_util.h"

#include <fmt/format.h>

#include <algorithm>

namespace clustersim::calibrate {

GemmShape parse_gemm_shape(std::string_view text, const std::string& where) {
    GemmShape shape;
    std::string_view dims = text;
    const auto colon = text.find(':');
    if (colon != std::string_view::npos) {
        shape.layout = std::string(text.substr(colon + 1));
        dims = text.substr(0, colon);
        if (shape.layout != "NN" && shape.layout != "NT" && shape.layout != "TN" &&
            shape.layout != "TT")
            throw InputError(fmt::format("{}: layout '{}' in '{}': expected NN, NT, TN or TT",
                                         where, shape.layout, text));
    }
    std::int64_t* out[] = {&shape.m, &shape.n, &shape.k};
    std::size_t start = 0;
    for (int i = 0; i < 3; ++i) {
        const auto x = dims.find('x', start);
        const bool last = i == 2;
        if (last != (x == std::string_view::npos))
            throw InputError(fmt::format("{}: expected MxNxK or MxNxK:LAYOUT (like "
                                         "4096x4096x4096:TN), got '{}'",
                                         where, text));
        const auto part = dims.substr(start, last ? std::string_view::npos : x - start);
        const auto v = detail::parse_integer(part);
        if (!v || *v < 1 || *v > (std::int64_t{1} << 20))
            throw InputError(fmt::format("{}: dimension '{}' in '{}': expected an integer from 1 "
                                         "to 1048576",
                                         where, part, text));
        *out[i] = *v;
        start = x + 1;
    }
    return shape;
}

RunOptions quick_run_options() {
    RunOptions o;
    o.quick = true;
    o.max_bytes = std::int64_t{1} << 30;
    o.in_place = false;
    return o;
}

const std::vector<std::string>& run_parts() {
    static const std::vector<std::string> parts{"collectives", "p2p",    "gemm",
                                                "copy",        "launch", "sustained"};
    return parts;
}

void check_run_options(const RunOptions& o) {
    for (const auto& p : o.only) {
        if (std::find(run_parts().begin(), run_parts().end(), p) == run_parts().end())
            throw InputError(fmt::format("--only: unknown part '{}' (valid: collectives, p2p, "
                                         "gemm, copy, launch, sustained)",
                                         p));
    }
    if (o.gpus < 0)
        throw InputError(fmt::format("--gpus: expected a positive count, got {}", o.gpus));
    if (o.min_bytes < 1 || o.max_bytes < o.min_bytes)
        throw InputError(fmt::format("--min-bytes/--max-bytes: expected 1 <= min <= max, got {} "
                                     "and {}",
                                     o.min_bytes, o.max_bytes));
    if (o.factor < 2)
        throw InputError(fmt::format("--factor: expected 2 or more, got {}", o.factor));
    for (auto d : o.gemm_dtypes) {
        if (d == hardware::Dtype::fp64)
            throw InputError("--gemm-dtype: fp64 GEMMs are not measured (fp32, tf32, fp16, bf16, "
                             "fp8)");
    }
}

} // namespace clustersim::calibrate
