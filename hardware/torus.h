#pragma once
/// \file
/// A TPU slice: chips on a 2-D or 3-D torus of ICI links, the `torus:` section of a hardware file.
///
/// A slice is a shape ("4x4x8": chips per axis x, y, z). Its chips sit on hosts (a block of
/// chips per host: "2x2x1" on v4 and v5p, "4x2" on v5e and v6e), each chip with its ICI links
/// to its neighbours on every axis and, where the generation has it, a wraparound link closing
/// the axis into a ring:
/// - `cube` generations (v4, v5p, TPU7x): racks of 4x4x4 cubes joined by optical circuit switches
///   give every axis its wraparound once the slice is whole cubes (each axis a multiple of 4);
///   smaller slices are meshes (the JAX scaling book, "TPUs", on wraparounds; Google's v5p
///   page). v4's twisted tori (4x4x8, 4x8x8, ...) are treated as plain tori: the twist shortens
///   the longest routes, which the per-axis rings of the collectives do not use.
/// - `full_axis` generations (v5e, v6e): 16x16 pods without optical switches; an axis wraps only
///   where it spans the pod (a v5e 8x16 wraps on its 16-long axis; the scaling book).
///
/// In the cluster the slice is the node (its ICI domain, as a GB200 NVL72 rack's NVLink domain
/// is), and several slices (`nodes`) join over the data-center network (DCN, multislice): every
/// NIC on the fat tree of `network:`. The devices JAX sees are chips x devices_per_chip (TPU7x
/// shows its two dies as two devices); clustersim's GPU counts count those devices.
///
/// Devices are numbered host by host (the chips of host 0, then host 1, ...; hosts x-fastest
/// over the slice's grid of hosts, a host's chips x-fastest within its block, a chip's devices
/// one after another), as JAX numbers a slice's devices process by process; `coordinates`
/// gives a device's place on the torus.

#include "hardware/link.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::hardware {

/// Chips per axis x, y, z (z = 1 on a 2-D torus).
using TorusShape = std::array<int, 3>;

/// Which axes close into rings (see the file comment).
enum class Wraparound : std::uint8_t {
    cube,      ///< every axis, once every axis is a multiple of 4 (whole 4x4x4 cubes)
    full_axis, ///< an axis that spans the pod (its length in `pod`)
};

struct TorusSpec {
    int dims = 0;              ///< 2 or 3; 0: not a torus (GPU clusters)
    TorusShape shape{1, 1, 1}; ///< the slice (chips per axis)
    TorusShape host{1, 1, 1};  ///< a host's block of chips
    TorusShape pod{1, 1, 1};   ///< the pod's axes: no slice axis is longer
    int max_chips = 0;         ///< the largest single slice
    int devices_per_chip = 1;  ///< devices JAX sees per chip
    int tensor_cores = 1;      ///< TensorCores per chip (megacore: one device for two)
    int links_per_chip = 0;    ///< ICI ports of a chip
    int nics_per_host = 1;     ///< DCN NICs of a host (node.nic is one of them)
    LinkSpec link;             ///< one ICI link, per direction; latency: one hop's
    LinkSpec die_link;         ///< between the devices of one chip (devices_per_chip > 1)
    Wraparound wraparound = Wraparound::cube;
    /// Shapes offered below the rule (the generation's documented small slices; every shape of
    /// a full_axis generation).
    std::vector<TorusShape> shapes;
    /// From one 4x4x4 cube up, any shape of whole cubes within `pod` and `max_chips`.
    bool whole_cubes = false;

    bool present() const { return dims > 0; }
    int chips() const { return shape[0] * shape[1] * shape[2]; }
    int devices() const { return chips() * devices_per_chip; }
    /// The axis wraps around (a ring of its chips, not a line), for the slice's shape.
    bool wraps(int axis) const;
    /// The host's block oriented to divide the slice's shape (a whole host where the slice is
    /// smaller than one).
    TorusShape host_block() const;
    int chips_per_host() const;
    /// ICI links (each two directed edges) of the slice.
    std::int64_t ici_links() const;
};

/// "4x4x8" (3-D) or "16x16" (2-D).
std::string to_string(const TorusShape& s, int dims);

/// A device's place: its chip's coordinates and which of the chip's devices it is.
struct TorusPlace {
    TorusShape chip{};
    int core = 0;
};
/// The place of device `local` (0 .. devices() - 1) of a slice.
TorusPlace coordinates(const TorusSpec& t, int local);
/// The device (0 .. devices() - 1) at a place.
int device_at(const TorusSpec& t, const TorusPlace& place);

/// Whether the generation offers `shape` (any order of its axes): empty if it does, else why not
/// with the shapes it does offer.
/// (A 2-D shape's third axis is taken as 1.)
std::string why_not_offered(const TorusSpec& t, TorusShape shape);

/// Parses "4x4x8" or "16x16" (axes 1 to 4096) for a torus of `dims` dimensions; throws
/// InputError naming `key` with the shapes the generation offers.
TorusShape parse_slice(const TorusSpec& t, std::string_view text, std::string_view key);

/// The documented shape of a slice of `chips` chips (the most cubic of the offered ones with
/// that count, axes ascending), or nullopt-like {0,0,0} when none has it.
TorusShape shape_for_chips(const TorusSpec& t, int chips);

/// The offered shapes, small ones first, as an error lists them ("2x2x1 (4), ..., and any
/// AxBxC of whole 4x4x4 cubes up to 6144 chips").
std::string offered_shapes(const TorusSpec& t);

} // namespace clustersim::hardware
