// A TPU slice's ICI torus in the cluster graph (hardware/torus.h, graph_builder.h).
//
// Per chip one router vertex (VertexKind::ici): its devices' HBM reach it over an edge of the
// chip's whole ICI bandwidth (links_per_chip links; on a chip of several devices the die link),
// and it joins the routers of its neighbours on every axis by one ICI link, each two directed
// edges with the link's bandwidth and one hop's latency. Routers forward (a route from one chip
// to a far one crosses the routers between, as ICI routes through chips); devices never do.
#include "hardware/graph_builder.h"

namespace clustersim::hardware::detail {

void add_torus(GraphBuilder& g, const TorusSpec& t, int node,
               const std::vector<Topology::VertexId>& hbm) {
    const int chips = t.chips();
    const int first_chip = node * chips;
    std::vector<Topology::VertexId> router(static_cast<std::size_t>(chips));
    // Routers by chip number (host-major, as the devices: torus.h), so a chip's router follows
    // its predecessor's whatever the shape.
    for (int c = 0; c < chips; ++c)
        router[static_cast<std::size_t>(c)] = g.add_vertex(VertexKind::ici, node, first_chip + c);
    const LinkSpec port{t.devices_per_chip > 1
                            ? t.die_link.bandwidth
                            : t.link.bandwidth * static_cast<double>(t.links_per_chip),
                        t.devices_per_chip > 1 ? t.die_link.latency : sim::Time::zero()};
    for (std::size_t d = 0; d < hbm.size(); ++d)
        g.add_link(hbm[d], router[d / static_cast<std::size_t>(t.devices_per_chip)], LinkKind::ici,
                   port);
    // Each chip links to its + neighbour on every axis; the last chip of a wrapped axis to the
    // first. Chips in the order of their numbers, axes x, y, z: the same edges for every slice.
    for (int c = 0; c < chips; ++c) {
        const TorusPlace at = coordinates(t, c * t.devices_per_chip);
        for (int a = 0; a < 3; ++a) {
            const auto axis = static_cast<std::size_t>(a);
            const int n = t.shape[axis];
            if (n < 2 || (at.chip[axis] == n - 1 && !t.wraps(a)))
                continue;
            TorusPlace next = at;
            next.chip[axis] = (at.chip[axis] + 1) % n;
            const int other = device_at(t, next) / t.devices_per_chip;
            g.add_link(router[static_cast<std::size_t>(c)], router[static_cast<std::size_t>(other)],
                       LinkKind::ici, t.link);
        }
    }
}

GraphSize torus_size(const TorusSpec& t) {
    GraphSize s;
    s.vertices = t.chips();
    s.edges = 2.0 * (static_cast<double>(t.devices()) + static_cast<double>(t.ici_links()));
    return s;
}

} // namespace clustersim::hardware::detail
