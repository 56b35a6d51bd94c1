#pragma once
/// \file
/// The exception types every clustersim library throws. Libraries never exit; `main()` maps
/// these to exit codes (InputError -> 2, DeviceUnavailable -> 3, anything else -> 1).

#include <stdexcept>
#include <string>

namespace clustersim {

/// Base of all clustersim errors.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Bad input from the user: a config file, a command-line value, a measurement file. The
/// message is complete and printable as one line ("file:line:col: key 'x': expected ...").
class InputError : public Error {
public:
    using Error::Error;
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
