#pragma once
// A gzip member of some bytes (zlib's deflate with a gzip header), for the tests that read
// compressed profiler traces.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <string>

namespace clustersim::test {

inline std::string gzip(const std::string& data) {
    z_stream z{};
    REQUIRE(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
                         Z_DEFAULT_STRATEGY) == Z_OK);
    std::string out(deflateBound(&z, data.size()), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

} // namespace clustersim::test
