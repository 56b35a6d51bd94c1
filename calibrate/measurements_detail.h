#pragma once
/// \file
/// What the files of measurements.h's implementation share, internal to calibrate/: the names
/// of the enums and choices a measurement file uses, the typed field tables (measurement_fields.h
/// with the member each field lands in), and how a step setting's value is written.
/// measurements.cpp holds the names and derived quantities, measurement_fields.cpp the field
/// tables, measurements_settings.cpp the step settings (the experiment file's key tables),
/// measurements_write.cpp the writer, measurements_read.cpp the reader and
/// measurements_check.cpp the checks across entries and the merge.

#include "base/text.h"
#include "calibrate/measurement_fields.h"
#include "calibrate/measurements.h"

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace clustersim::calibrate::measurements_detail {

inline constexpr std::array<std::string_view, 4> kCopyKindNames{
    "device_to_device", "host_to_device", "device_to_host", "peer"};
inline constexpr std::array<std::string_view, 2> kCopyMethodNames{"kernel", "memcpy"};
inline constexpr std::array<std::string_view, 3> kGemmVariantNames{"plain", "fast_accum",
                                                                   "accumulate_fp32"};
inline constexpr std::array<std::string_view, 3> kLaunchMethodNames{
    "host_submit", "gpu_back_to_back", "launch_and_sync"};
/// NCCL's algorithm names (NCCL_ALGO), lower case, plus our hierarchical composition.
inline constexpr std::array<std::string_view, 9> kAlgorithms{
    "ring",           "tree",          "direct", "nvls",        "nvls_tree",
    "collnet_direct", "collnet_chain", "pat",    "hierarchical"};
inline constexpr std::array<std::string_view, 4> kLayouts{"NN", "NT", "TN", "TT"};
inline constexpr std::array<std::string_view, kKernelClassCount> kKernelClassNames{
    "gemm", "attention", "elementwise", "collective", "copy", "other"};
inline constexpr std::array<std::string_view, 4> kPhases{"", "forward", "backward", "optimizer"};

template <std::size_t N>
std::string join(const std::array<std::string_view, N>& names) {
    return base::join(std::vector<std::string>(names.begin(), names.end()), ", ");
}

template <typename E, std::size_t N>
std::optional<E> find_name(const std::array<std::string_view, N>& names, std::string_view text) {
    for (std::size_t i = 0; i < N; ++i) {
        if (names[i] == text)
            return static_cast<E>(i);
    }
    return std::nullopt;
}

/// A step setting's value as an error message or a settings key writes it: true/false,
/// 'text', or the number.
std::string describe(const SettingValue& v);

// ---------------------------------------------------------------------------------------------
// The typed field tables
// ---------------------------------------------------------------------------------------------

class ObjectReader; // measurements_reader.h

/// An enum member (or an optional one) as the index of its name in FieldInfo::choices: the
/// enum's values are 0, 1, ... in the order of its names.
template <class S>
struct EnumMember {
    std::optional<std::size_t> (*get)(const S&) = nullptr; ///< nullopt: an empty optional
    void (*set)(S&, std::size_t) = nullptr;
};

template <class T>
inline constexpr bool kIsOptional = false;
template <class T>
inline constexpr bool kIsOptional<std::optional<T>> = true;

template <auto Member>
struct EnumOf;
template <class S, class T, T S::*Member>
struct EnumOf<Member> {
    using Spec = S;
    static std::optional<std::size_t> get(const S& s) {
        if constexpr (kIsOptional<T>) {
            if (!(s.*Member))
                return std::nullopt;
            return static_cast<std::size_t>(*(s.*Member));
        } else {
            return static_cast<std::size_t>(s.*Member);
        }
    }
    static void set(S& s, std::size_t i) {
        if constexpr (kIsOptional<T>)
            s.*Member = static_cast<typename T::value_type>(i);
        else
            s.*Member = static_cast<T>(i);
    }
};
/// `enum_member<&S::m>`: the EnumMember of the enum (or optional enum) member m of S.
template <auto Member>
inline constexpr EnumMember<typename EnumOf<Member>::Spec> enum_member{&EnumOf<Member>::get,
                                                                       &EnumOf<Member>::set};

/// Where a field's value lands in the record `S`: a member (none for a derived rate or a
/// field with functions of its own).
template <class S>
struct FieldMember {
    // The constructors are written out, noexcept, because GCC 12 crashes computing the
    // exception specification of a defaulted one for the variant in Field's initializer.
    FieldMember() noexcept {}
    template <class M>
    FieldMember(M m) noexcept // NOLINT(google-explicit-constructor): `.member = &S::m`
        : v(m) {}
    std::variant<std::monostate, int S::*, std::int64_t S::*, std::optional<std::int64_t> S::*,
                 double S::*, bool S::*, std::string S::*, sim::Time S::*,
                 std::vector<std::vector<std::int64_t>> S::*, Settings S::*, EnumMember<S>>
        v;
};

/// One field of the record `S`: what is known of it, the member it lands in, and for a derived
/// rate the record's function that computes it (in B/s or FLOP/s). A field no member can hold
/// (a step's model, a preset name or settings) is read and written by its own functions.
template <class S>
struct Field {
    FieldInfo info;
    FieldMember<S> member = {};
    double (S::*rate)() const = nullptr;
    void (*read)(ObjectReader&, std::string_view key, S&) = nullptr;
    void (*write)(const S&, std::string_view key, nlohmann::ordered_json&) = nullptr;
};

/// A record type's table: what RecordInfo says, with the typed fields.
template <class S>
struct Record {
    std::string_view list;
    bool optional_list = false;
    std::string_view meaning;
    std::vector<Field<S>> fields;
};

/// The table of each record type (measurement_fields.cpp).
template <class S>
const Record<S>& record();
template <>
const Record<Environment>& record<Environment>();
template <>
const Record<CollectiveMeasurement>& record<CollectiveMeasurement>();
template <>
const Record<GemmMeasurement>& record<GemmMeasurement>();
template <>
const Record<CopyMeasurement>& record<CopyMeasurement>();
template <>
const Record<P2pMeasurement>& record<P2pMeasurement>();
template <>
const Record<LaunchMeasurement>& record<LaunchMeasurement>();
template <>
const Record<StepMeasurement>& record<StepMeasurement>();
template <>
const Record<KernelMeasurement>& record<KernelMeasurement>();
template <>
const Record<TraceStepMeasurement>& record<TraceStepMeasurement>();

/// Calls `f(record<T>(), files.list...)` for each list of a measurement file, in the order
/// a file holds them: the one place that names the lists (their keys are in the tables).
template <class F, class... Files>
void for_each_list(F&& f, Files&... files) {
    f(record<CollectiveMeasurement>(), files.collectives...);
    f(record<GemmMeasurement>(), files.gemms...);
    f(record<CopyMeasurement>(), files.copies...);
    f(record<P2pMeasurement>(), files.p2p...);
    f(record<LaunchMeasurement>(), files.launches...);
    f(record<StepMeasurement>(), files.steps...);
    f(record<KernelMeasurement>(), files.kernels...);
    f(record<TraceStepMeasurement>(), files.trace_steps...);
}

/// A step's section of settings as JSON, keys in order.
nlohmann::ordered_json settings_json(const Settings& s);

/// A time unit's length: seconds (what the reader multiplies by) and picoseconds (what the
/// writer divides by), each exact as a literal.
struct TimeUnit {
    double seconds;
    double picoseconds;
};
/// "us" or "ms".
TimeUnit time_unit(std::string_view unit);
/// What a rate in `unit` ("GB/s", "TFLOP/s") is divided by from B/s or FLOP/s.
double rate_scale(std::string_view unit);

} // namespace clustersim::calibrate::measurements_detail
