#pragma once
/// \file
/// The exception types every clustersim library throws. Libraries never exit; `main()` maps
/// these to exit codes (InputError -> 2, DeviceUnavailable -> 3, anything else -> 1).

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace clustersim {

/// Base of all clustersim errors.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Where in an input a problem sits. Lines and columns are 1-based; 0 means unknown.
struct SourceLocation {
    std::string file;
    int line = 0;
    int column = 0;
    std::string key; ///< dotted key path ("gpu.hbm.bandwidth"); empty when none applies
};

/// Bad input from the user: a config file, a command-line value, a measurement file. The
/// message is complete and printable as one line ("file:line:col: key 'x': expected ...");
/// where the reader knows it, `where()` gives the same location as data, so that a caller can
/// point at it without parsing the message.
class InputError : public Error {
public:
    using Error::Error;
    InputError(const std::string& message, SourceLocation where)
        : Error(message)
        , where_(std::move(where)) {}

    const std::optional<SourceLocation>& where() const { return where_; }

private:
    std::optional<SourceLocation> where_;
};

/// A quantity with units that could not be parsed ("900GB/s", "2us", "1GiB").
class UnitsError : public InputError {
public:
    using InputError::InputError;
};

/// Work that needs a device (a GPU) found none.
class DeviceUnavailable : public Error {
public:
    using Error::Error;
};

} // namespace clustersim
