#include "config/input_record.h"

#include "base/error.h"

#include <algorithm>
#include <filesystem>
#include <mutex>

namespace clustersim::config {

namespace {

namespace fs = std::filesystem;

struct Record {
    std::mutex lock;
    bool active = false;
    std::vector<std::string> paths;
};

Record& record() {
    static Record r;
    return r;
}

} // namespace

InputRecord::InputRecord() {
    Record& r = record();
    const std::lock_guard<std::mutex> guard(r.lock);
    if (r.active)
        return;
    r.active = true;
    r.paths.clear();
    owner_ = true;
}

InputRecord::~InputRecord() {
    if (!owner_)
        return;
    Record& r = record();
    const std::lock_guard<std::mutex> guard(r.lock);
    r.active = false;
    r.paths.clear();
}

void note_input(const std::string& path) {
    Record& r = record();
    const std::lock_guard<std::mutex> guard(r.lock);
    if (!r.active || std::find(r.paths.begin(), r.paths.end(), path) != r.paths.end())
        return;
    r.paths.push_back(path);
}

std::vector<std::string> inputs_read() {
    Record& r = record();
    const std::lock_guard<std::mutex> guard(r.lock);
    return r.paths;
}

bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    if (fs::exists(a, ec) && fs::exists(b, ec)) {
        const bool same = fs::equivalent(a, b, ec);
        return !ec && same;
    }
    return fs::weakly_canonical(fs::absolute(a, ec), ec) ==
           fs::weakly_canonical(fs::absolute(b, ec), ec);
}

void refuse_if_read(const std::string& output, const std::string& option) {
    if (output.empty())
        return;
    std::error_code ec;
    const fs::file_status status = fs::status(output, ec);
    // A device or a FIFO (`--trace /dev/stdout`) is written through, never replaced.
    if (fs::exists(status) && !fs::is_regular_file(status))
        return;
    for (const std::string& input : inputs_read()) {
        if (same_file(output, input))
            throw InputError((option.empty() ? "" : option + " ") + output +
                             ": is an input of this command (read as " + input +
                             "); writing it would destroy it: give another file");
    }
}

} // namespace clustersim::config
