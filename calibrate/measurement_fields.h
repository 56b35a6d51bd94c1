#pragma once
/// \file
/// The fields of a measurement file declared once, as a table per record type: each field's
/// key, type and unit, bounds or choices, whether the file must give it (and when the writer
/// leaves it out), the member it lands in, and for a derived rate how it is computed and
/// checked. The way config/key_table.h declares the experiment and hardware keys.
///
/// One table serves everything that knows a record's fields: the writer and the reader loop
/// over it (calibrate/measurements_write.cpp, measurements_read.cpp), and docs/measurements.md's
/// tables are generated from it (`clustersim init --docs measurements`,
/// scripts/gen-config-docs.sh). Rules that relate several fields (a step's tp x pp x dp = gpus,
/// a peer copy's GPUs, duplicate points) stay in measurements_check.cpp. This header is plain
/// data; the typed tables, with the members they land in, are in measurements_detail.h.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::calibrate {

/// What a field's value is in the JSON: how the reader checks it and the docs describe it.
enum class FieldType : std::uint8_t {
    integer,  ///< a JSON integer from min to max
    number,   ///< a positive, finite JSON number
    boolean,  ///< true or false
    text,     ///< a string
    choice,   ///< one of `choices`
    time,     ///< a positive number of `unit` (us or ms), exact to the picosecond
    rate,     ///< derived from the record's other fields (see `formula`), in `unit`
    dims,     ///< a list of lists of non-negative integers
    settings, ///< an object of the experiment file's keys of the section the key names
    model,    ///< a model preset's name, or an object of the experiment file's model keys
};
/// "integer", "number", ..., as the docs name the types.
std::string_view to_string(FieldType t);

/// Whether a file must give a field, and when the writer writes it.
enum class Presence : std::uint8_t {
    required,  ///< always written; a record without it is refused
    optional,  ///< written only when it differs from a default record's value, which a record
               ///< without it reads as ("leave the key out when not known")
    defaulted, ///< always written; a record without it reads as the default (a derived rate
               ///< is then not checked)
};

/// What is known of one field, for every reader of the table. Written with designated
/// initializers, in this order.
struct FieldInfo {
    std::string_view name;
    FieldType type = FieldType::integer;
    Presence presence = Presence::required;
    /// A time's unit ("us", "ms"), a rate's ("GB/s", "TFLOP/s"), a size's ("B").
    std::string_view unit = {};
    std::int64_t min = 0; ///< integer: least value
    std::int64_t max = 0; ///< integer: greatest value
    /// choice: the names, in the order of the enum the field lands in when it is one.
    std::vector<std::string> choices = {};
    /// choice: what a wrong name is called in the error ("unknown copy kind 'disk' (valid:
    /// ...)"); empty: "expected one of ..., got 'x'".
    std::string_view what = {};
    /// Read only when the record gives this other key (and then required), written with it;
    /// without it the key is unknown.
    std::string_view with = {};
    /// text and choice: the error when the value is "" (empty: "" is a value like another).
    std::string_view if_empty = {};
    /// rate: how it is computed from the other fields, as the docs and the error say
    /// ("bytes / time_us"); the written value is rounded to six significant digits and a
    /// value read must agree with the computed one to 1%.
    std::string_view formula = {};
    /// environment: when two files are merged and give different values, a warning says so
    /// (a version); otherwise the first file's value stands (a date, a host).
    bool warn_on_merge = false;
    /// The nccl-tests column or profiler field it mirrors ("size", "#wrong").
    std::string_view mirrors = {};
    std::string_view meaning = {};
    /// The member it lands in ("CollectiveMeasurement::bytes").
    std::string_view lands = {};
};

/// One record type's table for the docs: the top-level key of its list ("collectives"; ""
/// for the environment, an object of its own), a paragraph on what one record is, and its
/// fields in the order they are written.
struct RecordInfo {
    std::string_view list;
    /// The list is written only when it, or a list after it, has records (so that files
    /// without them read as before the list existed).
    bool optional_list = false;
    std::string_view meaning;
    std::vector<const FieldInfo*> fields;
};

/// The environment's table, then each list's in the order a file holds them.
const std::vector<RecordInfo>& measurement_records();

} // namespace clustersim::calibrate
