#pragma once
/// \file
/// The files a command has read, so that no file it writes replaces one of them. `run exp.yaml
/// --trace hw.yaml` where exp.yaml says `hardware: ./hw.yaml`, an `extends:` chain, the
/// measurement JSON `calibrate import` reads: the readers of config/ (load_yaml_file,
/// BoundedFile) note each file here, and every writer asks `refuse_if_read` before it
/// touches a path. One check in one place, over every input, whatever path named it.
///
/// Recording happens only while an InputRecord is alive (the command line opens one per
/// command, app/cli.cpp); a library user or a test that loads files directly records
/// nothing. It is process-wide state by necessity (the readers are called from deep inside
/// the loaders, and from a sweep's threads), guarded by a mutex.

#include <string>
#include <vector>

namespace clustersim::config {

/// While alive, the files read are recorded (one at a time: nested records share the first).
class InputRecord {
public:
    InputRecord();
    ~InputRecord();
    InputRecord(const InputRecord&) = delete;
    InputRecord& operator=(const InputRecord&) = delete;

private:
    bool owner_ = false;
};

/// Notes that `path` was read (ignored when no InputRecord is alive).
void note_input(const std::string& path);
/// The files noted so far, in the order first read.
std::vector<std::string> inputs_read();

/// Throws InputError when `output` is a file this command has read (the same file through any
/// path or link), naming the output's `option` ("--trace") when given.
void refuse_if_read(const std::string& output, const std::string& option = "");

/// Whether two paths name one file: the same inode where both exist, else the same normalised
/// absolute path.
bool same_file(const std::string& a, const std::string& b);

} // namespace clustersim::config
