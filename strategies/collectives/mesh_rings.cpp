#include "strategies/collectives/mesh_rings.h"

#include <algorithm>
#include <array>

namespace clustersim::strategies::collectives::detail {
namespace {

/// ROCm/rccl src/graph/rome_models.cc (0cbce2a7), rome_model_79: the 8-GPU, 7-link MI300X node
/// without NICs. Its ringBase lists these 14 rings twice (28 channels: the same load).
constexpr std::array<std::array<int, 8>, 14> kRccl8Rings{{
    {0, 1, 2, 3, 4, 5, 6, 7},
    {0, 1, 2, 3, 4, 5, 7, 6},
    {0, 2, 4, 1, 3, 6, 5, 7},
    {0, 2, 4, 6, 1, 7, 3, 5},
    {0, 3, 1, 5, 2, 7, 4, 6},
    {0, 3, 5, 1, 6, 2, 7, 4},
    {0, 4, 1, 7, 3, 6, 2, 5},
    {7, 6, 5, 4, 3, 2, 1, 0},
    {6, 7, 5, 4, 3, 2, 1, 0},
    {7, 5, 6, 3, 1, 4, 2, 0},
    {5, 3, 7, 1, 6, 4, 2, 0},
    {6, 4, 7, 2, 5, 1, 3, 0},
    {4, 7, 2, 6, 1, 5, 3, 0},
    {5, 2, 6, 3, 7, 1, 4, 0},
}};

/// rome_model_81 (8 GPUs, 7 links, 8 NICs): "N<e> e ... x N<x>", a channel per NIC; entered at
/// GPU c, left at a GPU that no other channel leaves from.
constexpr std::array<std::array<int, 8>, 8> kRccl8Chains{{
    {0, 1, 2, 3, 4, 5, 6, 7},
    {1, 0, 2, 4, 3, 5, 7, 6},
    {2, 5, 0, 3, 6, 1, 7, 4},
    {3, 7, 0, 4, 2, 1, 6, 5},
    {4, 6, 2, 7, 3, 0, 5, 1},
    {5, 4, 7, 1, 3, 2, 6, 0},
    {6, 3, 1, 4, 0, 7, 5, 2},
    {7, 2, 0, 6, 4, 1, 5, 3},
}};

/// Walecki's zig-zag: on positions 0 .. m-1 around a circle (m even), path i visits i, i+1,
/// i-1, i+2, i-2, ..., i+m/2; the m/2 paths for i = 0 .. m/2-1 use every edge once.
std::vector<int> zigzag(int m, int i) {
    std::vector<int> path{i};
    for (int step = 1; static_cast<int>(path.size()) < m; ++step) {
        path.push_back((i + step) % m);
        if (static_cast<int>(path.size()) < m)
            path.push_back(((i - step) % m + m) % m);
    }
    return path;
}

} // namespace

std::vector<std::vector<int>> mesh_rings(int g) {
    std::vector<std::vector<int>> rings;
    if (g <= 2) {
        std::vector<int> one;
        for (int i = 0; i < g; ++i)
            one.push_back(i);
        rings.push_back(std::move(one));
        return rings;
    }
    if (g == 8) {
        for (const auto& r : kRccl8Rings)
            rings.emplace_back(r.begin(), r.end());
        return rings;
    }
    std::vector<std::vector<int>> cycles;
    if (g % 2 == 1) {
        // Odd g: position g-1 is the hub; each zig-zag path over the other g-1 positions,
        // closed through the hub, is a Hamiltonian cycle, and the (g-1)/2 cycles use every edge
        // once.
        for (int i = 0; i < (g - 1) / 2; ++i) {
            std::vector<int> c{g - 1};
            const std::vector<int> path = zigzag(g - 1, i);
            c.insert(c.end(), path.begin(), path.end());
            cycles.push_back(std::move(c));
        }
    } else {
        // Even g: the g/2 zig-zag paths closed on themselves; the closing edges {i, i+g/2}
        // are also in one path each, so they carry twice the load.
        for (int i = 0; i < g / 2; ++i)
            cycles.push_back(zigzag(g, i));
    }
    for (const auto& c : cycles) {
        rings.push_back(c);
        rings.emplace_back(c.rbegin(), c.rend());
    }
    return rings;
}

std::vector<std::vector<int>> mesh_chains(int g, int channels) {
    std::vector<std::vector<int>> chains;
    if (g == 8 && channels <= 8) {
        for (int c = 0; c < channels; ++c)
            chains.emplace_back(kRccl8Chains[static_cast<std::size_t>(c)].begin(),
                                kRccl8Chains[static_cast<std::size_t>(c)].end());
        return chains;
    }
    // Channel c: ring c (of the one-node rings, cyclically) opened before position c mod g.
    const std::vector<std::vector<int>> rings = mesh_rings(g);
    for (int c = 0; c < channels; ++c) {
        std::vector<int> ring = rings[static_cast<std::size_t>(c) % rings.size()];
        const auto start = std::find(ring.begin(), ring.end(), c % g);
        std::rotate(ring.begin(), start, ring.end());
        chains.push_back(std::move(ring));
    }
    return chains;
}

} // namespace clustersim::strategies::collectives::detail
