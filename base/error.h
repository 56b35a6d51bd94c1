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

    /// "FILE", "FILE:LINE" or "FILE:LINE:COL" (what an editor jumps to); empty without a file.
    std::string text() const {
        std::string s = file;
        if (!file.empty() && line > 0) {
            s += ":" + std::to_string(line);
            if (column > 0)
                s += ":" + std::to_string(column);
        }
        return s;
    }
};

/// Bad input from the user: a config file, a command-line value, a measurement file. Kept as
/// data: the reason (what is wrong and what was expected), where it sits (SourceLocation), and
/// whether the message names the location's key; `what()` is composed from them once, as one
/// printable line: "FILE:LINE:COL: key 'KEY': REASON". A caller that says it elsewhere (a
/// sweep's row about its own file, `--set` instead of the file's line) takes the parts it
/// needs, never parses the text.
///
/// The older constructor, a message that already carries its location, stays for the readers
/// that compose their own; its reason() is the whole message.
class InputError : public Error {
public:
    /// Whether the composed message names the location's key ("key 'K': ").
    enum class KeyShown : bool { no, yes };

    /// A message complete in itself, with no location known.
    explicit InputError(const std::string& message)
        : Error(message)
        , reason_(message) {}
    /// A message that already carries its location, and that location as data.
    InputError(const std::string& message, SourceLocation where)
        : Error(message)
        , reason_(message)
        , where_(std::move(where)) {}
    /// The reason at `where`: what() is "FILE[:LINE[:COL]]: [key 'KEY': ]REASON".
    InputError(SourceLocation where, std::string reason, KeyShown key = KeyShown::yes)
        : Error(compose(where, reason, key))
        , reason_(std::move(reason))
        , where_(std::move(where))
        , key_shown_(key == KeyShown::yes && !where_->key.empty())
        , composed_(true) {}

    const std::optional<SourceLocation>& where() const { return where_; }
    /// What is wrong, without the location (the whole message for a message that carries its
    /// own).
    const std::string& reason() const { return reason_; }
    /// The message as said by a caller that names the file itself: the reason, after the key
    /// when the message names it ("key 'KEY': REASON"). The whole message for one that carries
    /// its own location.
    std::string keyed_reason() const {
        return key_shown_ ? "key '" + where_->key + "': " + reason_ : reason_;
    }
    /// Whether the location sits in `file` and the message was composed from it (reason() and
    /// keyed_reason() then leave the location out).
    bool located_in(const std::string& file) const {
        return composed_ && where_ && where_->file == file;
    }
    /// The message as said where `file` is named already (a sweep's rows, all about one
    /// experiment; a measurement's source): without the location when it sits in `file`, whole
    /// otherwise.
    std::string message_for(const std::string& file) const {
        return located_in(file) ? keyed_reason() : what();
    }

private:
    static std::string compose(const SourceLocation& where, const std::string& reason,
                               KeyShown key) {
        std::string s = where.text();
        if (!s.empty())
            s += ": ";
        if (key == KeyShown::yes && !where.key.empty())
            s += "key '" + where.key + "': ";
        return s + reason;
    }

    std::string reason_;
    std::optional<SourceLocation> where_;
    bool key_shown_ = false;
    bool composed_ = false;
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
