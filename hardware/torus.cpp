#include "hardware/torus.h"

#include "base/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

namespace clustersim::hardware {

namespace {

/// The shape's axes in ascending order (x <= y <= z on 3-D, x <= y on 2-D). An insertion sort
/// of at most three axes: std::sort on them draws GCC's -Warray-bounds at -O3 (its insertion
/// sort's threshold of 16 read as an index into the three-element array).
TorusShape sorted(TorusShape s, int dims) {
    for (int i = 1; i < dims; ++i)
        for (int j = i; j > 0 && s[std::size_t(j - 1)] > s[std::size_t(j)]; --j)
            std::swap(s[std::size_t(j - 1)], s[std::size_t(j)]);
    return s;
}

bool whole_cube_shape(const TorusSpec& t, const TorusShape& s) {
    if (!t.whole_cubes || t.dims != 3)
        return false;
    const TorusShape pod = sorted(t.pod, 3);
    const TorusShape a = sorted(s, 3);
    for (int i = 0; i < 3; ++i) {
        if (a[i] % 4 != 0 || a[i] > pod[i])
            return false;
    }
    return static_cast<long>(a[0]) * a[1] * a[2] <= t.max_chips;
}

bool listed(const TorusSpec& t, const TorusShape& s) {
    const TorusShape a = sorted(s, t.dims);
    return std::any_of(t.shapes.begin(), t.shapes.end(),
                       [&](const TorusShape& o) { return sorted(o, t.dims) == a; });
}

} // namespace

bool TorusSpec::wraps(int axis) const {
    const int n = shape[static_cast<std::size_t>(axis)];
    if (n < 3) // a ring of 2 is the line's one link
        return false;
    if (wraparound == Wraparound::full_axis)
        return n == pod[static_cast<std::size_t>(axis)] ||
               n == *std::max_element(pod.begin(), pod.begin() + dims);
    for (int a = 0; a < dims; ++a) {
        if (shape[static_cast<std::size_t>(a)] % 4 != 0)
            return false;
    }
    return true;
}

TorusShape TorusSpec::host_block() const {
    const int per_host = host[0] * host[1] * host[2];
    if (chips() <= per_host)
        return shape;
    // The host's block as given if it tiles the slice, else in the first orientation that does
    // (v5e's 4x2 host on a 2x4 slice).
    auto tiles = [&](const TorusShape& h) {
        for (int a = 0; a < 3; ++a) {
            if (shape[static_cast<std::size_t>(a)] % h[static_cast<std::size_t>(a)] != 0)
                return false;
        }
        return true;
    };
    if (tiles(host))
        return host;
    TorusShape h = sorted(host, dims);
    do {
        if (tiles(h))
            return h;
    } while (std::next_permutation(h.begin(), h.begin() + dims));
    return shape; // offered shapes always tile; a whole slice on one "host" otherwise
}

int TorusSpec::chips_per_host() const {
    const TorusShape h = host_block();
    return h[0] * h[1] * h[2];
}

std::int64_t TorusSpec::ici_links() const {
    std::int64_t links = 0;
    for (int a = 0; a < 3; ++a) {
        const int n = shape[static_cast<std::size_t>(a)];
        if (n < 2)
            continue;
        const std::int64_t lines = chips() / n;
        links += lines * (n - 1 + (wraps(a) ? 1 : 0));
    }
    return links;
}

std::string to_string(const TorusShape& s, int dims) {
    return dims == 2 ? fmt::format("{}x{}", s[0], s[1]) : fmt::format("{}x{}x{}", s[0], s[1], s[2]);
}

TorusPlace coordinates(const TorusSpec& t, int local) {
    const TorusShape h = t.host_block();
    const int per_host = h[0] * h[1] * h[2];
    const int chip = local / t.devices_per_chip;
    TorusPlace p;
    p.core = local % t.devices_per_chip;
    const int host = chip / per_host;
    const int in_host = chip % per_host;
    const int hx = t.shape[0] / h[0], hy = t.shape[1] / h[1];
    const TorusShape host_at{host % hx, host / hx % hy, host / (hx * hy)};
    const TorusShape chip_in{in_host % h[0], in_host / h[0] % h[1], in_host / (h[0] * h[1])};
    for (std::size_t a = 0; a < 3; ++a)
        p.chip[a] = host_at[a] * h[a] + chip_in[a];
    return p;
}

int device_at(const TorusSpec& t, const TorusPlace& place) {
    const TorusShape h = t.host_block();
    const int hx = t.shape[0] / h[0], hy = t.shape[1] / h[1];
    TorusShape host_at{}, chip_in{};
    for (std::size_t a = 0; a < 3; ++a) {
        host_at[a] = place.chip[a] / h[a];
        chip_in[a] = place.chip[a] % h[a];
    }
    const int host = host_at[0] + hx * (host_at[1] + hy * host_at[2]);
    const int in_host = chip_in[0] + h[0] * (chip_in[1] + h[1] * chip_in[2]);
    return (host * h[0] * h[1] * h[2] + in_host) * t.devices_per_chip + place.core;
}

std::string offered_shapes(const TorusSpec& t) {
    std::vector<TorusShape> small = t.shapes;
    std::sort(small.begin(), small.end(), [](const TorusShape& a, const TorusShape& b) {
        return a[0] * a[1] * a[2] < b[0] * b[1] * b[2];
    });
    std::string out;
    for (const TorusShape& s : small)
        out += (out.empty() ? "" : ", ") +
               fmt::format("{} ({})", to_string(s, t.dims), s[0] * s[1] * s[2]);
    if (t.whole_cubes)
        out += fmt::format("{}and any AxBxC of whole 4x4x4 cubes (each axis a multiple of 4) "
                           "within {} up to {} chips",
                           out.empty() ? "" : ", ", to_string(t.pod, 3), t.max_chips);
    return out;
}

std::string why_not_offered(const TorusSpec& t, TorusShape shape) {
    if (t.dims == 2)
        shape[2] = 1;
    if (listed(t, shape) || whole_cube_shape(t, shape))
        return {};
    return fmt::format("{} is not a slice this generation offers; it offers {}",
                       to_string(shape, t.dims), offered_shapes(t));
}

TorusShape parse_slice(const TorusSpec& t, std::string_view text, std::string_view key) {
    const auto fail = [&](const std::string& what) {
        throw InputError(key.empty() ? what : fmt::format("{}: {}", key, what));
    };
    if (!t.present())
        fail(fmt::format("'{}' names a TPU slice, but the hardware has no torus (a GPU preset: "
                         "give --gpus)",
                         text));
    TorusShape s{1, 1, 1};
    int axes = 0;
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t x = std::min(text.find('x', at), text.size());
        int v = 0;
        const char* b = text.data() + at;
        const char* e = text.data() + x;
        const auto [ptr, ec] = std::from_chars(b, e, v);
        if (axes >= 3 || ec != std::errc() || ptr != e || v < 1 || v > 4096)
            fail(fmt::format("expected a slice shape like {} ({} axes of 1 to 4096 chips), got "
                             "'{}'",
                             t.dims == 2 ? "16x16" : "4x4x8", t.dims, text));
        s[static_cast<std::size_t>(axes++)] = v;
        at = x + 1;
    }
    if (axes != t.dims)
        fail(fmt::format("'{}' has {} axes; this generation's torus has {}: it offers {}", text,
                         axes, t.dims, offered_shapes(t)));
    const std::string why = why_not_offered(t, s);
    if (!why.empty())
        fail(why);
    return s;
}

TorusShape shape_for_chips(const TorusSpec& t, int chips) {
    TorusShape best{0, 0, 0};
    int best_max = std::numeric_limits<int>::max();
    auto consider = [&](const TorusShape& s) {
        if (s[0] * s[1] * s[2] != chips)
            return;
        const TorusShape a = sorted(s, t.dims);
        const int longest = a[static_cast<std::size_t>(t.dims - 1)];
        if (longest < best_max) { // the most cubic: the shortest longest axis
            best = a;
            best_max = longest;
        }
    };
    for (const TorusShape& s : t.shapes)
        consider(s);
    if (t.whole_cubes && chips % 64 == 0 && chips <= t.max_chips) {
        for (int x = 4; x <= chips; x += 4)
            for (int y = x; static_cast<long>(x) * y <= chips; y += 4)
                if (chips % (x * y) == 0 && (chips / (x * y)) % 4 == 0 && chips / (x * y) >= y &&
                    whole_cube_shape(t, {x, y, chips / (x * y)}))
                    consider({x, y, chips / (x * y)});
    }
    return best;
}

} // namespace clustersim::hardware
