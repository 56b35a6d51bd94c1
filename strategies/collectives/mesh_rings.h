#pragma once
/// \file
/// Internal to strategies/collectives: the rings RCCL runs over a fully connected mesh of GPUs
/// (an xGMI node: a link between every pair, no switch), by position in the node.
///
/// A ring over a switch can take the GPUs in any order; over a mesh each hop is one link, so a
/// single ring loads g of the g(g-1) directed links and the others idle. RCCL therefore runs
/// several rings at once, each a different permutation, chosen so that together they load
/// every link alike: on the 8-GPU MI300X node its topology model (ROCm/rccl
/// src/graph/rome_models.cc, rome_model_79, at 0cbce2a7) lists 14 rings, 7 directed Hamiltonian
/// cycles and their reverses, that use each of the 56 directed links exactly twice, so a ring
/// all-reduce moves data on all 7 links of every GPU at once. Across nodes (rome_model_81,
/// 8 GPUs and 8 NICs) each channel enters a node at the GPU beside one NIC and leaves at the
/// GPU beside another, through a Hamiltonian path of its own.
///
/// For sizes RCCL lists no model for, the same idea by construction (Walecki's decomposition
/// of the complete graph into Hamiltonian cycles, both directions of each): on an odd number
/// of GPUs every link carries the same load; on an even number (other than 8) the closing
/// links of the cycles form a perfect matching that carries twice the load of the others.

#include <vector>

namespace clustersim::strategies::collectives::detail {

/// Directed cycles over positions 0 .. g-1 that a one-node ring all-reduce runs as its channels,
/// each a permutation of all g positions. g >= 1.
std::vector<std::vector<int>> mesh_rings(int g);

/// For a ring across nodes: per channel c (0 .. channels-1) a Hamiltonian path over positions
/// 0 .. g-1, entered at its first position and left at its last; the first positions of the
/// channels differ, and so do the last ones where there are at most g channels and RCCL's
/// model gives them (g = 8). g >= 1, channels >= 1.
std::vector<std::vector<int>> mesh_chains(int g, int channels);

} // namespace clustersim::strategies::collectives::detail
