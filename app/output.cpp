#include "app/output.h"

#include "base/error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace clustersim::app {

void write_file_atomically(const std::string& path, std::string_view content) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    if (!fs::is_directory(dir))
        throw InputError(path + ": cannot write: directory '" + dir.string() + "' does not exist");
    // Built by appends: GCC 12 warns falsely (-Wrestrict) on the chained operator+ form.
    std::string tmp_name = ".";
    tmp_name.append(target.filename().string()).append(".tmp.").append(std::to_string(::getpid()));
    const fs::path tmp = dir / tmp_name;
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out)
            throw InputError(path + ": cannot write: " + std::strerror(errno));
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
        out.flush();
        if (!out) {
            std::error_code ec;
            fs::remove(tmp, ec);
            throw InputError(path + ": write failed");
        }
    }
    std::error_code ec;
    fs::rename(tmp, target, ec);
    if (ec) {
        fs::remove(tmp, ec);
        throw InputError(path + ": cannot write: " + ec.message());
    }
}

} // namespace clustersim::app
