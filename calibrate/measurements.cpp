#include "calibrate/measurements.h"

#include "calibrate/measurements_detail.h"

namespace clustersim::calibrate {

using namespace measurements_detail;

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

std::string_view to_string(CopyKind kind) {
    return kCopyKindNames[static_cast<std::size_t>(kind)];
}
std::optional<CopyKind> parse_copy_kind(std::string_view text) {
    return find_name<CopyKind>(kCopyKindNames, text);
}
std::string_view to_string(CopyMethod method) {
    return kCopyMethodNames[static_cast<std::size_t>(method)];
}
std::optional<CopyMethod> parse_copy_method(std::string_view text) {
    return find_name<CopyMethod>(kCopyMethodNames, text);
}
std::string_view to_string(GemmVariant v) {
    return kGemmVariantNames[static_cast<std::size_t>(v)];
}
std::optional<GemmVariant> parse_gemm_variant(std::string_view text) {
    return find_name<GemmVariant>(kGemmVariantNames, text);
}
std::string_view to_string(LaunchMethod method) {
    return kLaunchMethodNames[static_cast<std::size_t>(method)];
}
std::optional<LaunchMethod> parse_launch_method(std::string_view text) {
    return find_name<LaunchMethod>(kLaunchMethodNames, text);
}
std::string_view to_string(KernelClass c) {
    return kKernelClassNames[static_cast<std::size_t>(c)];
}
std::optional<KernelClass> parse_kernel_class(std::string_view text) {
    return find_name<KernelClass>(kKernelClassNames, text);
}

std::size_t MeasurementFile::size() const {
    std::size_t n = 0;
    for_each_list([&](const auto&, const auto& list) { n += list.size(); }, *this);
    return n;
}

sim::Time KernelMeasurement::per_call() const {
    return calls > 0 ? time / calls : time;
}

// ---------------------------------------------------------------------------------------------
// Derived rates
// ---------------------------------------------------------------------------------------------

double CollectiveMeasurement::algbw() const {
    return static_cast<double>(bytes) / time.seconds();
}
double CollectiveMeasurement::busbw() const {
    return algbw() * strategies::collectives::bus_factor(op, gpus);
}
double GemmMeasurement::flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}
double GemmMeasurement::flop_rate() const {
    return flops() / time.seconds();
}
double CopyMeasurement::bandwidth() const {
    return static_cast<double>(bytes) / time.seconds();
}
double P2pMeasurement::bandwidth() const {
    return static_cast<double>(bytes) / time.seconds();
}

} // namespace clustersim::calibrate
