#pragma once
// Shared helpers of the layer-work tests (test_layer_work, test_context_parallel, test_fp8).

#include "strategies/models/layer_work.h"

#include <catch2/catch.hpp>

#include <string_view>

namespace layer_work_test {

/// The op named `name` in `p` (fails the test case when there is none).
inline const clustersim::strategies::models::Op&
op_named(const clustersim::strategies::models::PassWork& p, std::string_view name) {
    for (const auto& op : p.ops) {
        if (op.name == name)
            return op;
    }
    FAIL("no op " << name);
    return p.ops[0];
}

} // namespace layer_work_test
