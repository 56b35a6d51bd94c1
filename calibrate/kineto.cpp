#include "calibrate/kineto.h"

#include "base/error.h"
#include "calibrate/import_util.h"
#include "hardware/compute_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

namespace clustersim::calibrate {

// ---------------------------------------------------------------------------------------------
// gzip
// ---------------------------------------------------------------------------------------------

bool is_gzip(std::string_view data) {
    return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
           static_cast<unsigned char>(data[1]) == 0x8b;
}

bool looks_like_trace(std::string_view text) {
    if (is_gzip(text))
        return true;
    const std::string_view head = text.substr(0, std::min<std::size_t>(text.size(), 1 << 16));
    const auto first = head.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos || head[first] != '{')
        return false;
    return head.find("\"traceEvents\"") != std::string_view::npos ||
           head.find("\"schemaVersion\"") != std::string_view::npos;
}

std::string gunzip(std::string_view data, const std::string& name, std::uint64_t max_bytes,
                   std::vector<std::string>* warnings) {
    z_stream z{};
    // 16 + MAX_WBITS: a gzip header and trailer (zlib manual, inflateInit2).
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        throw InputError(name + ": cannot start decompressing (zlib)");
    std::string out;
    std::size_t in_pos = 0;
    char buffer[1 << 16];
    int rc = Z_OK;
    while (true) {
        if (z.avail_in == 0 && in_pos < data.size()) {
            const std::size_t n = std::min<std::size_t>(data.size() - in_pos, 1u << 30);
            z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + in_pos));
            z.avail_in = static_cast<uInt>(n);
            in_pos += n;
        }
        z.next_out = reinterpret_cast<Bytef*>(buffer);
        z.avail_out = sizeof buffer;
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
            inflateEnd(&z);
            throw InputError(fmt::format("{}: not a valid gzip file ({}); compress the trace with "
                                         "gzip, or give the .json itself",
                                         name, z.msg != nullptr ? z.msg : "corrupt data"));
        }
        const std::size_t produced = sizeof buffer - z.avail_out;
        if (out.size() + produced > max_bytes) {
            inflateEnd(&z);
            throw InputError(fmt::format("{}: decompresses to more than {}; trace fewer steps "
                                         "(torch.profiler.schedule(active=...))",
                                         name, config::describe_limit(max_bytes)));
        }
        out.append(buffer, produced);
        if (rc == Z_STREAM_END) {
            const std::size_t rest = z.avail_in + (data.size() - in_pos);
            if (rest > 0 && warnings != nullptr)
                warnings->push_back(fmt::format("{}: {} bytes after the end of the gzip data were "
                                                "ignored (a second file appended?)",
                                                name, rest));
            break;
        }
        if (produced == 0 && z.avail_in == 0 && in_pos >= data.size()) {
            inflateEnd(&z);
            throw InputError(name + ": the gzip data is truncated (the file was cut short); copy "
                                    "the whole file again");
        }
    }
    inflateEnd(&z);
    return out;
}

std::string_view phase_name(int phase) {
    switch (phase) {
    case 1:
        return "forward";
    case 2:
        return "backward";
    case 3:
        return "optimizer";
    default:
        return "";
    }
}

namespace {

constexpr int kMaxDepth = 64;
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;

enum class Cat : std::uint8_t {
    other,
    kernel,
    memcpy,
    memset,
    cpu_op,
    user_annotation,
    python_function,
    runtime,
};

Cat parse_cat(std::string_view c) {
    if (c == "kernel" || c == "Kernel")
        return Cat::kernel;
    if (c == "gpu_memcpy" || c == "Memcpy")
        return Cat::memcpy;
    if (c == "gpu_memset" || c == "Memset")
        return Cat::memset;
    if (c == "cpu_op" || c == "Operator")
        return Cat::cpu_op;
    if (c == "user_annotation")
        return Cat::user_annotation;
    if (c == "python_function")
        return Cat::python_function;
    if (c == "cuda_runtime" || c == "cuda_driver" || c == "Runtime")
        return Cat::runtime;
    return Cat::other;
}

/// One event, as much of it as the importer uses.
struct Event {
    Cat cat = Cat::other;
    char ph = 0;
    int name = -1;
    std::int64_t pid = -1, tid = -1;
    std::int64_t ts = 0, dur = -1; // nanoseconds
    std::int64_t external_id = -1, correlation = -1, stream = -1, device = -1, seq = -1;
    std::int64_t bytes = -1, in_nelems = -1, out_nelems = -1, group_size = -1;
    int collective = -1, nccl_dtype = -1;
    int dims = -1;     // index into Parsed::dims
    int types = -1;    // index into Parsed::string_lists
    int strides = -1;  // index into Parsed::dims
    int concrete = -1; // index into Parsed::string_lists
    std::size_t index = 0;
    bool time_overflows = false; ///< ts or dur a number past what nanoseconds hold
};

using Dims = std::vector<std::vector<std::int64_t>>;

struct Parsed {
    std::vector<Event> events;
    std::vector<std::string> names;
    std::unordered_map<std::string, int> name_ids;
    std::vector<Dims> dims;
    std::vector<std::vector<int>> string_lists;
    bool has_schema = false;
    bool has_trace_events = false;
    bool clustersim = false;
    std::map<std::int64_t, std::string> devices; // deviceProperties: id -> name
    std::int64_t world_size = 0;
    std::int64_t cuda_runtime = 0;
    std::size_t skipped_times = 0;
    /// Of those, times that are numbers too large for nanoseconds in 63 bits (17-digit
    /// microsecond timestamps): said by name when nothing else is left.
    std::size_t overflowing_times = 0;
    /// Tensor dimensions that are numbers but negative or past kMaxDim (read as unknown).
    std::size_t bad_dims = 0;

    int intern(const std::string& s) {
        auto [it, inserted] = name_ids.emplace(s, static_cast<int>(names.size()));
        if (inserted)
            names.push_back(s);
        return it->second;
    }
};

/// Microseconds with up to three decimals ("12.345", "1689861288825108.123", "7") to integer
/// nanoseconds, exactly; other spellings ("1e3") through a double.
std::optional<std::int64_t> micros_to_ns(const std::string& s) {
    std::int64_t whole = 0;
    std::size_t i = 0;
    bool neg = false;
    if (i < s.size() && s[i] == '-') {
        neg = true;
        ++i;
    }
    const std::size_t digits_start = i;
    // At most this many whole microseconds: whole * 1000 + 999 (+1 rounding) still fits.
    constexpr std::int64_t kMaxWhole = (std::numeric_limits<std::int64_t>::max() - 1000) / 1000;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        const int digit = s[i] - '0';
        if (whole > (kMaxWhole - digit) / 10)
            return std::nullopt;
        whole = whole * 10 + digit;
        ++i;
    }
    if (i == digits_start)
        return std::nullopt;
    std::int64_t frac = 0;
    int frac_digits = 0;
    bool round_up = false;
    if (i < s.size() && s[i] == '.') {
        ++i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
            if (frac_digits < 3) {
                frac = frac * 10 + (s[i] - '0');
                ++frac_digits;
            } else if (frac_digits == 3) {
                round_up = s[i] >= '5';
                ++frac_digits;
            }
            ++i;
        }
    }
    if (i != s.size()) {
        const double v = std::strtod(s.c_str(), nullptr);
        if (!std::isfinite(v) || std::abs(v) > 9e12)
            return std::nullopt;
        return static_cast<std::int64_t>(std::llround(v * 1000.0));
    }
    for (int d = std::min(frac_digits, 3); d < 3; ++d)
        frac *= 10;
    std::int64_t ns = whole * 1000 + frac + (round_up ? 1 : 0);
    return neg ? -ns : ns;
}

/// The SAX handler: a stack of containers, and the event being read.
class Handler : public nlohmann::json_sax<nlohmann::json> {
public:
    explicit Handler(Parsed& p)
        : p_(p) {}

    std::string error;

    bool null() override { return scalar(Value{}); }
    bool boolean(bool v) override {
        Value x;
        x.kind = Value::flag;
        x.i = v ? 1 : 0;
        return scalar(x);
    }
    bool number_integer(number_integer_t v) override {
        Value x;
        x.kind = Value::whole;
        x.i = v;
        x.text = nullptr;
        return scalar(x);
    }
    bool number_unsigned(number_unsigned_t v) override {
        Value x;
        x.kind = Value::whole;
        x.i = v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                  ? std::numeric_limits<std::int64_t>::max()
                  : static_cast<std::int64_t>(v);
        return scalar(x);
    }
    bool number_float(number_float_t v, const string_t& s) override {
        Value x;
        x.kind = Value::real;
        x.f = v;
        x.text = &s;
        return scalar(x);
    }
    bool string(string_t& v) override {
        Value x;
        x.kind = Value::text_value;
        x.text = &v;
        return scalar(x);
    }
    bool binary(binary_t&) override { return scalar(Value{}); }

    bool start_object(std::size_t) override {
        if (!push(Frame::object))
            return false;
        const int d = depth();
        if (d == 1)
            return true;
        if (in_events() && d == 4 && key_is(stack_[2].key, "args"))
            args_ = true;
        if (in_events() && d == 3) {
            ev_ = Event{};
            ev_.index = p_.events.size();
            cat_text_.clear();
        }
        return true;
    }
    bool end_object() override {
        const int d = depth();
        if (in_events() && d == 3)
            finish_event();
        if (d == 4)
            args_ = false;
        if (d == 3 && key_is(top_key(1), "deviceProperties") && dev_id_ >= 0) {
            p_.devices[dev_id_] = dev_name_;
            dev_id_ = -1;
            dev_name_.clear();
        }
        stack_.pop_back();
        return true;
    }
    bool start_array(std::size_t) override {
        if (!push(Frame::array))
            return false;
        const int d = depth();
        if (d == 2 && key_is(stack_[0].key, "traceEvents")) {
            p_.has_trace_events = true;
            events_ = true;
        }
        if (in_args() && d == 5) {
            const std::string_view k = stack_[3].key;
            if (k == "Input Dims" || k == "Input dims")
                list_ = List::dims, dims_.clear();
            else if (k == "Input Strides")
                list_ = List::strides, dims_.clear();
            else if (k == "Input type")
                list_ = List::types, strings_.clear();
            else if (k == "Concrete Inputs")
                list_ = List::concrete, strings_.clear();
            else
                list_ = List::none;
        }
        if (in_args() && d == 6 && (list_ == List::dims || list_ == List::strides))
            dims_.emplace_back();
        return true;
    }
    bool end_array() override {
        const int d = depth();
        if (in_args() && d == 5) {
            switch (list_) {
            case List::dims:
                ev_.dims = static_cast<int>(p_.dims.size());
                p_.dims.push_back(std::move(dims_));
                break;
            case List::strides:
                ev_.strides = static_cast<int>(p_.dims.size());
                p_.dims.push_back(std::move(dims_));
                break;
            case List::types:
                ev_.types = static_cast<int>(p_.string_lists.size());
                p_.string_lists.push_back(std::move(strings_));
                break;
            case List::concrete:
                ev_.concrete = static_cast<int>(p_.string_lists.size());
                p_.string_lists.push_back(std::move(strings_));
                break;
            case List::none:
                break;
            }
            dims_ = {};
            strings_ = {};
            list_ = List::none;
        }
        if (d == 2)
            events_ = false;
        stack_.pop_back();
        return true;
    }
    bool key(string_t& k) override {
        // Taken, not copied: the lexer clears its buffer before the next token.
        stack_.back().key.swap(k);
        return true;
    }
    bool parse_error(std::size_t position, const std::string&,
                     const nlohmann::detail::exception& e) override {
        std::string what = e.what();
        const auto close = what.find("] ");
        if (close != std::string::npos)
            what = what.substr(close + 2);
        error = fmt::format("not valid JSON at byte {} ({})", position, what);
        return false;
    }

private:
    struct Frame {
        enum Kind : std::uint8_t { object, array } kind;
        std::string key;
    };
    struct Value {
        enum Kind : std::uint8_t { empty, flag, whole, real, text_value } kind = empty;
        std::int64_t i = 0;
        double f = 0;
        const std::string* text = nullptr;
    };
    enum class List : std::uint8_t { none, dims, strides, types, concrete };

    int depth() const { return static_cast<int>(stack_.size()); }
    /// A key against a literal: lengths first, so most mismatches cost one comparison (a
    /// std::string against a `const char*` measured the literal and compared bytes each time:
    /// a tenth of the import's instructions).
    static bool key_is(const std::string& key, std::string_view literal) {
        return std::string_view(key) == literal;
    }
    const std::string& top_key(int level) const {
        return stack_[static_cast<std::size_t>(level - 1)].key;
    }
    // Set on entering traceEvents' array and an event's args (not compared per value).
    bool in_events() const { return events_ && stack_.size() >= 2; }
    bool in_args() const { return args_ && stack_.size() >= 4; }

    bool push(Frame::Kind kind) {
        if (stack_.size() >= kMaxDepth) {
            error = fmt::format("nesting deeper than {} levels: not a profiler trace", kMaxDepth);
            return false;
        }
        if (stack_.empty() && kind != Frame::object) {
            error = "expected a JSON object at the top";
            return false;
        }
        stack_.push_back(Frame{kind, {}});
        return true;
    }

    static std::optional<std::int64_t> as_int(const Value& v) {
        if (v.kind == Value::whole)
            return v.i;
        if (v.kind == Value::real && std::isfinite(v.f) && std::abs(v.f) < 9e18 &&
            v.f == std::floor(v.f))
            return static_cast<std::int64_t>(v.f);
        if (v.kind == Value::text_value && v.text != nullptr) {
            // Kineto writes some args as strings ("\"allreduce\"" is a string; nelems may be).
            const std::string& s = *v.text;
            std::int64_t x = 0;
            if (s.empty() || s.size() > 18)
                return std::nullopt;
            for (char c : s) {
                if (c < '0' || c > '9')
                    return std::nullopt;
                x = x * 10 + (c - '0');
            }
            return x;
        }
        return std::nullopt;
    }
    static bool is_number(const Value& v) {
        return v.kind == Value::whole || v.kind == Value::real;
    }

    static std::optional<std::int64_t> as_ns(const Value& v) {
        if (v.kind == Value::whole) {
            // Compared without std::abs, which overflows on the most negative value.
            constexpr std::int64_t kMaxMicros = std::numeric_limits<std::int64_t>::max() / 1000;
            if (v.i > kMaxMicros || v.i < -kMaxMicros)
                return std::nullopt;
            return v.i * 1000;
        }
        if (v.kind == Value::real && v.text != nullptr)
            return micros_to_ns(*v.text);
        return std::nullopt;
    }

    bool scalar(const Value& v) {
        const int d = depth();
        if (d == 1) {
            const std::string_view k = stack_[0].key;
            if (k == "schemaVersion")
                p_.has_schema = true;
            else if (k == "cuda_runtime_version")
                p_.cuda_runtime = as_int(v).value_or(0);
            return true;
        }
        if (d == 2 && key_is(stack_[0].key, "otherData") && key_is(stack_[1].key, "clustersim"))
            p_.clustersim = true;
        if (d == 2 && key_is(stack_[0].key, "distributedInfo") &&
            key_is(stack_[1].key, "world_size"))
            p_.world_size = as_int(v).value_or(0);
        if (d == 3 && key_is(stack_[0].key, "deviceProperties")) {
            const std::string_view k = stack_[2].key;
            if (k == "id")
                dev_id_ = as_int(v).value_or(-1);
            else if (k == "name" && v.kind == Value::text_value)
                dev_name_ = *v.text;
            return true;
        }
        if (!in_events())
            return true;
        if (d == 3)
            return event_field(stack_[2].key, v);
        if (d == 4 && key_is(stack_[2].key, "args"))
            return arg_field(stack_[3].key, v);
        if (in_args() && d == 5 && (list_ == List::types || list_ == List::concrete))
            strings_.push_back(v.kind == Value::text_value ? p_.intern(*v.text) : -1);
        if (in_args() && d == 6 && (list_ == List::dims || list_ == List::strides) &&
            stack_.back().kind == Frame::array && !dims_.empty()) {
            const auto x = as_int(v);
            const bool ok = x && *x >= 0 && *x <= kMaxDim;
            p_.bad_dims += !ok && is_number(v) ? 1 : 0;
            dims_.back().push_back(ok ? *x : -1);
        }
        return true;
    }

    bool event_field(std::string_view k, const Value& v) {
        if (k == "ph" && v.kind == Value::text_value && !v.text->empty())
            ev_.ph = (*v.text)[0];
        else if (k == "cat" && v.kind == Value::text_value)
            ev_.cat = parse_cat(*v.text);
        else if (k == "name" && v.kind == Value::text_value)
            ev_.name = p_.intern(*v.text);
        else if (k == "pid")
            ev_.pid = as_int(v).value_or(-1);
        else if (k == "tid")
            ev_.tid = as_int(v).value_or(-1);
        else if (k == "ts") {
            const auto t = as_ns(v);
            ev_.ts = t.value_or(std::numeric_limits<std::int64_t>::min());
            ev_.time_overflows = ev_.time_overflows || (!t && is_number(v));
        } else if (k == "dur") {
            const auto t = as_ns(v);
            ev_.dur = t && *t >= 0 ? *t : -2;
            ev_.time_overflows = ev_.time_overflows || (!t && is_number(v));
        }
        return true;
    }

    bool arg_field(std::string_view k, const Value& v) {
        if (k == "External id" || k == "external id")
            ev_.external_id = as_int(v).value_or(-1);
        else if (k == "correlation")
            ev_.correlation = as_int(v).value_or(-1);
        else if (k == "stream")
            ev_.stream = as_int(v).value_or(-1);
        else if (k == "device")
            ev_.device = as_int(v).value_or(-1);
        else if (k == "Sequence number")
            ev_.seq = as_int(v).value_or(-1);
        else if (k == "bytes")
            ev_.bytes = as_int(v).value_or(-1);
        else if (k == "In msg nelems")
            ev_.in_nelems = as_int(v).value_or(-1);
        else if (k == "Out msg nelems")
            ev_.out_nelems = as_int(v).value_or(-1);
        else if (k == "Group size")
            ev_.group_size = as_int(v).value_or(-1);
        else if (k == "Collective name" && v.kind == Value::text_value)
            ev_.collective = p_.intern(*v.text);
        else if (k == "dtype" && v.kind == Value::text_value)
            ev_.nccl_dtype = p_.intern(*v.text);
        return true;
    }

    void finish_event() {
        if (ev_.ph != 'X')
            return; // metadata, instants, counters and flows: the args say what flows say
        if (ev_.ts == std::numeric_limits<std::int64_t>::min() || ev_.dur < 0) {
            ++p_.skipped_times;
            p_.overflowing_times += ev_.time_overflows ? 1 : 0;
            return;
        }
        if (ev_.cat == Cat::other)
            return;
        p_.events.push_back(ev_);
    }

    Parsed& p_;
    std::vector<Frame> stack_;
    Event ev_;
    std::string cat_text_;
    List list_ = List::none;
    bool events_ = false;
    bool args_ = false;
    std::vector<std::vector<std::int64_t>> dims_;
    std::vector<int> strings_;
    std::int64_t dev_id_ = -1;
    std::string dev_name_;
};

// ---------------------------------------------------------------------------------------------
// Classification
// ---------------------------------------------------------------------------------------------

bool contains(std::string_view s, std::string_view what) {
    return s.find(what) != std::string_view::npos;
}
bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

/// "void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)" ->
/// "at::native::vectorized_elementwise_kernel": no parameters, no template arguments.
std::string short_kernel_name(std::string_view name) {
    if (starts_with(name, "void "))
        name.remove_prefix(5);
    std::string text(name);
    for (std::size_t at = text.find("(anonymous namespace)"); at != std::string::npos;
         at = text.find("(anonymous namespace)"))
        text.replace(at, 21, "{anonymous}");
    name = text;
    std::string out;
    int angle = 0;
    for (char c : name) {
        if (c == '<')
            ++angle;
        else if (c == '>')
            angle = std::max(0, angle - 1);
        else if (c == '(' && angle == 0)
            break;
        else if (angle == 0)
            out += c;
    }
    if (out.size() > 120)
        out.resize(120);
    return out;
}

/// PyTorch's C++ type names in "Input type" to bytes and model dtypes.
struct TorchType {
    std::int64_t bytes = 0;
    std::optional<hardware::Dtype> dtype;
};
TorchType torch_type(std::string_view t) {
    using hardware::Dtype;
    if (t == "float")
        return {4, Dtype::fp32};
    if (t == "c10::Half")
        return {2, Dtype::fp16};
    if (t == "c10::BFloat16")
        return {2, Dtype::bf16};
    if (t == "double")
        return {8, Dtype::fp64};
    if (starts_with(t, "c10::Float8_"))
        return {1, Dtype::fp8};
    if (t == "long int" || t == "long" || t == "int64_t")
        return {8, std::nullopt};
    if (t == "int")
        return {4, std::nullopt};
    if (t == "short int")
        return {2, std::nullopt};
    if (t == "bool" || t == "unsigned char" || t == "signed char")
        return {1, std::nullopt};
    if (t == "c10::complex<float>")
        return {8, std::nullopt};
    return {0, std::nullopt};
}

/// c10 ScalarType names in the NCCL args ("BFloat16", "Float").
std::int64_t scalar_type_bytes(std::string_view t) {
    const std::string l = lower(t);
    if (l == "float" || l == "int" || l == "float32")
        return 4;
    if (l == "half" || l == "bfloat16" || l == "short")
        return 2;
    if (l == "double" || l == "long" || l == "complexfloat")
        return 8;
    if (l == "byte" || l == "char" || l == "bool" || starts_with(l, "float8"))
        return 1;
    return 0;
}

std::optional<CollectiveOp> collective_from(std::string_view text) {
    std::string s;
    for (char c : lower(text))
        if (c != '_' && c != ' ')
            s += c;
    using CollectiveOp = strategies::collectives::CollectiveOp;
    if (contains(s, "allreduce"))
        return CollectiveOp::all_reduce;
    if (contains(s, "allgather"))
        return CollectiveOp::all_gather;
    if (contains(s, "reducescatter"))
        return CollectiveOp::reduce_scatter;
    if (contains(s, "alltoall"))
        return CollectiveOp::all_to_all;
    if (contains(s, "broadcast"))
        return CollectiveOp::broadcast;
    if (contains(s, "sendrecv") || contains(s, "send") || contains(s, "recv"))
        return CollectiveOp::send_recv;
    if (contains(s, "reduce"))
        return CollectiveOp::reduce;
    if (contains(s, "gather"))
        return CollectiveOp::gather;
    if (contains(s, "scatter"))
        return CollectiveOp::scatter;
    return std::nullopt;
}

/// The layer number a range's name ends in: "layer3", "layers.3", "h.3", "block_3",
/// "nn.Module: Block_3"; nullopt when none.
std::optional<int> layer_of(std::string_view name) {
    const std::string l = lower(name);
    std::size_t end = l.size();
    std::size_t begin = end;
    while (begin > 0 && l[begin - 1] >= '0' && l[begin - 1] <= '9')
        --begin;
    if (begin == end || end - begin > 6)
        return std::nullopt;
    std::size_t p = begin;
    if (p > 0 && (l[p - 1] == '.' || l[p - 1] == '_' || l[p - 1] == ' ' || l[p - 1] == '#' ||
                  l[p - 1] == '-'))
        --p;
    for (std::string_view word : {"layers", "layer", "blocks", "block", "h"}) {
        if (p >= word.size() && l.compare(p - word.size(), word.size(), word) == 0) {
            const std::size_t w = p - word.size();
            if (w == 0 || !(l[w - 1] >= 'a' && l[w - 1] <= 'z'))
                return std::stoi(l.substr(begin));
        }
    }
    return std::nullopt;
}

/// Where SDPA's is_causal sits among an op's inputs (PyTorch's native_functions.yaml).
int causal_index(std::string_view op) {
    if (op == "aten::scaled_dot_product_attention")
        return 5;
    if (op == "aten::_scaled_dot_product_flash_attention")
        return 4;
    if (op == "aten::_scaled_dot_product_efficient_attention")
        return 6;
    if (op == "aten::_scaled_dot_product_cudnn_attention")
        return 6;
    if (op == "aten::_scaled_dot_product_flash_attention_backward" ||
        op == "aten::_scaled_dot_product_efficient_attention_backward")
        return 11;
    return -1;
}

struct Analysis {
    const Parsed& p;
    const std::string& file;
    std::vector<int> parent; // per event: the enclosing CPU range, -1 none
    std::unordered_map<std::int64_t, int> runtime_by_correlation;
    std::unordered_map<std::int64_t, int> op_by_external;
    std::unordered_map<std::int64_t, int> layer_by_seq;
    std::vector<int> name_layer; // per name id: -2 not computed, -1 none
    std::vector<int> step_event; // per event: its ProfilerStep index, -1 none

    const std::string& name(const Event& e) const {
        static const std::string none;
        return e.name >= 0 ? p.names[static_cast<std::size_t>(e.name)] : none;
    }
    int layer_name(const Event& e) {
        if (e.name < 0)
            return -1;
        int& l = name_layer[static_cast<std::size_t>(e.name)];
        if (l == -2)
            l = layer_of(name(e)).value_or(-1);
        return l;
    }
};

bool is_range(Cat c) {
    return c == Cat::cpu_op || c == Cat::user_annotation || c == Cat::python_function;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

KinetoTrace read_kineto_trace(std::string_view text, const std::string& name,
                              const ImportOptions& options) {
    const std::string how =
        "record with torch.profiler.profile(activities=[ProfilerActivity.CPU, "
        "ProfilerActivity.CUDA], record_shapes=True, schedule=...) and prof.step() per "
        "iteration, then prof.export_chrome_trace(\"trace.json\") "
        "(calibrate/pytorch/gpt_trace_steps.py does it)";
    Parsed p;
    p.events.reserve(text.size() / 400);
    {
        Handler h(p);
        const bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &h,
                                                  nlohmann::json::input_format_t::json, true);
        if (!ok) {
            const bool cut = h.error.find("unexpected end of input") != std::string::npos;
            throw InputError(fmt::format("{}: {}{}", name, h.error,
                                         cut ? ": the trace is truncated (the profiler or the copy "
                                               "did not finish); export it again"
                                             : ""));
        }
    }
    if (p.clustersim)
        throw InputError(name +
                         ": is a trace clustersim wrote (run --trace), not a PyTorch "
                         "profiler trace; " +
                         how);
    if (!p.has_trace_events)
        throw InputError(name + ": not a Chrome trace: no \"traceEvents\" list; " + how);
    if (!p.has_schema)
        throw InputError(name + ": not a PyTorch profiler (Kineto) trace: no \"schemaVersion\"; " +
                         how);

    // Times from the earliest event: Kineto before 2.1 wrote microseconds since the epoch,
    // which as picoseconds would not fit sim::Time.
    {
        std::int64_t base = std::numeric_limits<std::int64_t>::max();
        for (const Event& e : p.events)
            base = std::min(base, e.ts);
        for (Event& e : p.events) {
            e.ts -= base;
            if (e.ts > std::numeric_limits<std::int64_t>::max() / 2000 ||
                e.dur > std::numeric_limits<std::int64_t>::max() / 2000)
                throw InputError(fmt::format("{}: traceEvents[{}]: time out of range (more than "
                                             "50 days after the first event)",
                                             name, e.index));
        }
    }

    KinetoTrace out;
    ImportResult& r = out.imported;
    if (p.skipped_times > 0)
        r.warnings.push_back(fmt::format("{}: {} events without a valid ts or dur were skipped",
                                         name, p.skipped_times));
    if (p.bad_dims > 0)
        r.warnings.push_back(fmt::format("{}: {} tensor dimensions in Input Dims or Input "
                                         "Strides are negative or above {}; read as unknown",
                                         name, p.bad_dims, kMaxDim));

    // Events by time; for equal starts the longer (enclosing) first.
    std::vector<int> order(p.events.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        const Event& x = p.events[static_cast<std::size_t>(a)];
        const Event& y = p.events[static_cast<std::size_t>(b)];
        if (x.ts != y.ts)
            return x.ts < y.ts;
        return x.dur > y.dur;
    });

    Analysis a{p, name, {}, {}, {}, {}, std::vector<int>(p.names.size(), -2), {}};
    a.parent.assign(p.events.size(), -1);
    std::size_t cpu_ops = 0, with_shapes = 0, kernels = 0;
    {
        // Nesting per CPU thread: a stack of open ranges.
        std::map<std::pair<std::int64_t, std::int64_t>, std::vector<int>> stacks;
        for (int i : order) {
            const Event& e = p.events[static_cast<std::size_t>(i)];
            if (!is_range(e.cat) && e.cat != Cat::runtime)
                continue;
            auto& st = stacks[{e.pid, e.tid}];
            while (!st.empty()) {
                const Event& top = p.events[static_cast<std::size_t>(st.back())];
                if (top.ts + top.dur > e.ts || (top.ts == e.ts && top.dur >= e.dur))
                    break;
                st.pop_back();
            }
            a.parent[static_cast<std::size_t>(i)] = st.empty() ? -1 : st.back();
            if (is_range(e.cat))
                st.push_back(i);
        }
    }
    for (std::size_t i = 0; i < p.events.size(); ++i) {
        const Event& e = p.events[i];
        if (e.cat == Cat::runtime && e.correlation >= 0)
            a.runtime_by_correlation.emplace(e.correlation, static_cast<int>(i));
        if (e.cat == Cat::cpu_op) {
            ++cpu_ops;
            if (e.dims >= 0)
                ++with_shapes;
            if (e.external_id >= 0)
                a.op_by_external.emplace(e.external_id, static_cast<int>(i));
        }
        if (e.cat == Cat::kernel || e.cat == Cat::memcpy || e.cat == Cat::memset)
            ++kernels;
    }
    if (kernels == 0 && p.overflowing_times > 0)
        throw InputError(fmt::format(
            "{}: {} events were skipped because their ts or dur is too large (at most {} "
            "microseconds, 16 digits; a 17-digit timestamp does not fit in 63 bits of "
            "nanoseconds), which leaves no GPU kernel; write times in microseconds since the "
            "trace's start, as torch.profiler does",
            name, p.overflowing_times, std::numeric_limits<std::int64_t>::max() / 1000 - 1000));
    if (kernels == 0)
        throw InputError(name +
                         ": the trace has no GPU kernels (recorded without "
                         "ProfilerActivity.CUDA, or on the CPU only); " +
                         how);
    if (cpu_ops == 0)
        throw InputError(name +
                         ": the trace has no CPU ops (recorded without "
                         "ProfilerActivity.CPU), so its kernels have no shapes; " +
                         how);
    // Without record_shapes=True (most production traces) the kernels are still classed, by
    // the names of their ops and kernels, and the step, its kernels' times and its idle gaps
    // are what the trace measured; only the per-shape points (GEMM and attention FLOPs,
    // elementwise bytes) need shapes.
    const bool shapes = with_shapes > 0;
    if (!shapes)
        r.warnings.push_back(name +
                             ": no input shapes (recorded without record_shapes=True): kernels "
                             "classed by the names of their ops and kernels, without the "
                             "per-shape points (GEMM and attention FLOPs, bytes moved)");

    // The GPU.
    Environment env = detail::initial_environment(options);
    {
        std::set<std::int64_t> used;
        for (const Event& e : p.events)
            if (e.cat == Cat::kernel)
                used.insert(e.device >= 0 ? e.device : e.pid);
        std::set<std::string> described;
        for (auto d : used) {
            auto it = p.devices.find(d);
            if (it != p.devices.end() && !it->second.empty())
                described.insert(it->second);
        }
        if (described.size() > 1)
            throw InputError(fmt::format("{}: kernels ran on different GPU models ({}); one "
                                         "measurement file describes one GPU model",
                                         name, fmt::join(described, ", ")));
        if (described.empty()) {
            if (options.device.empty())
                throw InputError(name + ": the trace does not say which GPU it ran on (no "
                                        "\"deviceProperties\" for the kernels' device); record "
                                        "with a PyTorch that writes them (1.13 or later), or "
                                        "pass --device NAME (as nvidia-smi names it)");
        } else {
            const std::string& d = *described.begin();
            if (!options.device.empty() && options.device != d)
                throw InputError(fmt::format("{}: the trace says device '{}' but --device says "
                                             "'{}'",
                                             name, d, options.device));
            env.device = d;
        }
        env.device_count = p.world_size > 0 ? static_cast<int>(p.world_size) : 1;
        if (p.cuda_runtime > 0)
            env.cuda_version =
                fmt::format("runtime {}.{}", p.cuda_runtime / 1000, (p.cuda_runtime % 1000) / 10);
        env.tool = "torch.profiler (Kineto), via clustersim calibrate import";
    }
    r.measurements.environment = env;

    // Profiler steps.
    std::vector<int> step_events;
    for (int i : order) {
        const Event& e = p.events[static_cast<std::size_t>(i)];
        if (e.cat == Cat::user_annotation && starts_with(a.name(e), "ProfilerStep#"))
            step_events.push_back(i);
    }
    for (int i : step_events) {
        const Event& e = p.events[static_cast<std::size_t>(i)];
        out.steps.push_back(
            TracedStep{a.name(e), sim::Time::ns(e.ts), sim::Time::ns(e.ts + e.dur)});
    }
    auto step_at = [&](std::int64_t t) {
        auto it = std::upper_bound(
            out.steps.begin(), out.steps.end(), t,
            [](std::int64_t x, const TracedStep& s) { return x < s.start.picoseconds() / 1000; });
        if (it == out.steps.begin())
            return -1;
        --it;
        return t < it->end.picoseconds() / 1000 ? static_cast<int>(it - out.steps.begin()) : -1;
    };

    // Layers of forward ops by sequence number (for the backward).
    auto ancestors = [&](int i, auto&& visit) {
        for (int j = a.parent[static_cast<std::size_t>(i)]; j >= 0;
             j = a.parent[static_cast<std::size_t>(j)])
            if (!visit(j))
                return;
    };
    for (std::size_t i = 0; i < p.events.size(); ++i) {
        const Event& e = p.events[i];
        if (e.cat != Cat::cpu_op || e.seq < 0 || contains(a.name(e), "Backward"))
            continue;
        int layer = a.layer_name(e);
        if (layer < 0)
            ancestors(static_cast<int>(i), [&](int j) {
                layer = a.layer_name(p.events[static_cast<std::size_t>(j)]);
                return layer < 0;
            });
        if (layer >= 0)
            a.layer_by_seq.emplace(e.seq, layer);
    }

    // Kernels.
    std::map<std::string, std::size_t> groups;
    std::vector<KernelMeasurement>& ks = r.measurements.kernels;
    struct GemmInstance {
        std::int64_t m, n, k;
        hardware::Dtype dtype;
        std::string layout;
        std::int64_t ns;
        std::size_t first;
    };
    std::map<int, GemmInstance> gemm_by_op; // op event -> its kernels' time
    std::vector<std::int64_t> launch_ns;
    std::vector<std::pair<std::int64_t, std::int64_t>> busy;
    std::vector<std::int64_t> kernels_per_step(out.steps.size(), 0);
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> busy_per_step(out.steps.size());
    std::size_t no_launch = 0;

    for (std::size_t i = 0; i < p.events.size(); ++i) {
        const Event& e = p.events[i];
        if (e.cat == Cat::runtime && contains(a.name(e), "LaunchKernel"))
            launch_ns.push_back(e.dur);
    }

    for (int i : order) {
        const Event& e = p.events[static_cast<std::size_t>(i)];
        if (e.cat != Cat::kernel && e.cat != Cat::memcpy && e.cat != Cat::memset)
            continue;
        TracedKernel tk;
        tk.start = sim::Time::ns(e.ts);
        tk.duration = sim::Time::ns(e.dur);
        tk.device = static_cast<int>(e.device >= 0 ? e.device : std::max<std::int64_t>(e.pid, 0));
        tk.stream = static_cast<int>(
            std::clamp<std::int64_t>(e.stream >= 0 ? e.stream : e.tid, 0, 1 << 30));
        const std::string kname = short_kernel_name(a.name(e));

        // The launch call and the ranges around it.
        int launch = -1;
        if (e.correlation >= 0) {
            auto it = a.runtime_by_correlation.find(e.correlation);
            if (it != a.runtime_by_correlation.end())
                launch = it->second;
        }
        std::vector<int> chain; // innermost first
        if (launch >= 0) {
            ancestors(launch, [&](int j) {
                chain.push_back(j);
                return true;
            });
        } else if (e.external_id >= 0) {
            auto it = a.op_by_external.find(e.external_id);
            if (it != a.op_by_external.end()) {
                chain.push_back(it->second);
                ancestors(it->second, [&](int j) {
                    chain.push_back(j);
                    return true;
                });
            }
        }
        if (chain.empty() && launch < 0)
            ++no_launch;
        const std::int64_t cpu_time =
            launch >= 0 ? p.events[static_cast<std::size_t>(launch)].ts
                        : (chain.empty() ? e.ts : p.events[static_cast<std::size_t>(chain[0])].ts);
        tk.step = out.steps.empty() ? -1 : step_at(cpu_time);

        // The op: the innermost ATen op with recorded inputs (without shapes: the innermost
        // ATen op, which names the class but gives no shapes).
        int op = -1, named_op = -1;
        for (int j : chain) {
            const Event& c = p.events[static_cast<std::size_t>(j)];
            if (c.cat == Cat::cpu_op && c.dims >= 0) {
                op = j;
                break;
            }
            if (!shapes && named_op < 0 && c.cat == Cat::cpu_op)
                named_op = j;
        }
        // SDPA's own op has the [B, H, S, D] shapes; the flash / efficient kernels' ops below
        // it ("aten::_flash_attention_forward") have others.
        int sdpa = -1, attention_op = -1, phase = chain.empty() ? 0 : 1, layer = -1, bwd_seq = -1;
        for (int j : chain) {
            const Event& c = p.events[static_cast<std::size_t>(j)];
            const std::string& n = a.name(c);
            // Without shapes the ops are known by name alone (dims < 0 in every op).
            const bool usable = c.dims >= 0 || !shapes;
            if (sdpa < 0 && c.cat == Cat::cpu_op && usable && contains(n, "scaled_dot_product"))
                sdpa = j;
            if (attention_op < 0 && c.cat == Cat::cpu_op && usable &&
                (contains(n, "flash_attention") || contains(n, "efficient_attention")))
                attention_op = j;
            if (contains(n, "Backward") || starts_with(n, "autograd::engine")) {
                phase = 2;
                if (bwd_seq < 0 && c.seq >= 0)
                    bwd_seq = c.seq;
            }
            if (phase != 2 && (starts_with(n, "Optimizer.") || contains(lower(n), "optimizer")))
                phase = 3;
            if (layer < 0 && c.cat != Cat::runtime)
                layer = a.layer_name(c);
        }
        if (sdpa < 0)
            sdpa = attention_op;
        if (layer < 0 && bwd_seq >= 0) {
            auto it = a.layer_by_seq.find(bwd_seq);
            if (it != a.layer_by_seq.end())
                layer = it->second;
        }
        tk.phase = phase;
        tk.layer = layer;

        KernelMeasurement k;
        k.kernel = kname;
        k.stream = tk.stream;
        k.phase = std::string(phase_name(phase));
        k.layer = layer;
        const Event* shape_op = nullptr;
        const std::string kl = lower(kname);
        // The op that names the kernel's class: with shapes the shaped op, else the innermost.
        const int by = op >= 0 ? op : named_op;
        if (e.cat == Cat::memcpy || e.cat == Cat::memset) {
            k.kernel_class = KernelClass::copy;
            if (e.bytes > 0)
                k.bytes = std::min<std::int64_t>(e.bytes, std::int64_t{1} << 50);
        } else if (starts_with(kl, "nccl")) {
            k.kernel_class = KernelClass::collective;
            // The args Kineto copies onto the kernel, else those of record_param_comms.
            const Event* src = &e;
            if (src->collective < 0)
                for (int j : chain)
                    if (p.events[static_cast<std::size_t>(j)].collective >= 0) {
                        src = &p.events[static_cast<std::size_t>(j)];
                        break;
                    }
            std::optional<CollectiveOp> cop;
            if (src->collective >= 0)
                cop = collective_from(p.names[static_cast<std::size_t>(src->collective)]);
            if (!cop)
                cop = collective_from(
                    kname.substr(kname.find('_') == std::string::npos ? 0 : kname.find('_')));
            const std::int64_t esize =
                src->nccl_dtype >= 0
                    ? scalar_type_bytes(p.names[static_cast<std::size_t>(src->nccl_dtype)])
                    : 0;
            if (cop && src->group_size > 0 && esize > 0 && src->in_nelems >= 0) {
                k.collective = std::string(strategies::collectives::to_string(*cop));
                k.gpus = static_cast<int>(std::min<std::int64_t>(src->group_size, 1 << 20));
                // nccl-tests' size: the whole buffer for gathers (the output), else the input.
                const std::int64_t n =
                    *cop == CollectiveOp::all_gather || *cop == CollectiveOp::gather
                        ? src->out_nelems
                        : src->in_nelems;
                if (n > 0 && n < (std::int64_t{1} << 50) / esize)
                    k.bytes = n * esize;
            }
            if (op >= 0)
                k.op = a.name(p.events[static_cast<std::size_t>(op)]);
            else if (!chain.empty())
                k.op = a.name(p.events[static_cast<std::size_t>(chain[0])]);
        } else if (sdpa >= 0 || contains(kl, "flash") || contains(kl, "fmha") ||
                   (by >= 0 &&
                    (a.name(p.events[static_cast<std::size_t>(by)]) == "aten::bmm" ||
                     a.name(p.events[static_cast<std::size_t>(by)]) == "aten::baddbmm"))) {
            k.kernel_class = KernelClass::attention;
            const int s = sdpa >= 0 ? sdpa : by;
            if (s >= 0 && p.events[static_cast<std::size_t>(s)].dims >= 0)
                shape_op = &p.events[static_cast<std::size_t>(s)];
            else if (s >= 0)
                k.op = a.name(p.events[static_cast<std::size_t>(s)]);
        } else if (by >= 0) {
            const std::string& n = a.name(p.events[static_cast<std::size_t>(by)]);
            static const std::set<std::string> gemms{
                "aten::mm",     "aten::addmm",      "aten::_addmm_activation",
                "aten::matmul", "aten::linear",     "aten::addmv",
                "aten::mv",     "aten::_scaled_mm", "aten::dot"};
            k.kernel_class = gemms.count(n) ? KernelClass::gemm : KernelClass::elementwise;
            k.op = n;
            if (op >= 0)
                shape_op = &p.events[static_cast<std::size_t>(op)];
        } else if (!chain.empty()) {
            k.kernel_class = KernelClass::elementwise;
            k.op = a.name(p.events[static_cast<std::size_t>(chain[0])]);
        }
        if (shape_op != nullptr) {
            k.op = a.name(*shape_op);
            const Dims& dims = p.dims[static_cast<std::size_t>(shape_op->dims)];
            for (const auto& d : dims) {
                std::vector<std::int64_t> s;
                for (auto x : d)
                    s.push_back(std::max<std::int64_t>(x, 0));
                k.shapes.push_back(std::move(s));
            }
            std::vector<TorchType> types;
            if (shape_op->types >= 0)
                for (int t : p.string_lists[static_cast<std::size_t>(shape_op->types)])
                    types.push_back(t >= 0 ? torch_type(p.names[static_cast<std::size_t>(t)])
                                           : TorchType{});
            for (const auto& t : types)
                if (t.dtype) {
                    k.dtype = t.dtype;
                    break;
                }
            auto numel = [](const std::vector<std::int64_t>& d) -> std::optional<double> {
                double n = 1;
                for (auto x : d) {
                    if (x < 0)
                        return std::nullopt;
                    n *= static_cast<double>(x);
                }
                return n;
            };
            auto dim = [&](std::size_t in, std::size_t at) -> std::int64_t {
                return in < dims.size() && at < dims[in].size()
                           ? std::max<std::int64_t>(dims[in][at], 0)
                           : 0;
            };
            auto rank = [&](std::size_t in) { return in < dims.size() ? dims[in].size() : 0; };
            if (k.kernel_class == KernelClass::gemm) {
                // mm(a[M,K], b[K,N]); addmm(bias, a, b); linear(x[..., K], w[N, K]).
                std::size_t ia = k.op == "aten::addmm" || k.op == "aten::_addmm_activation" ? 1 : 0;
                std::int64_t m = 0, n = 0, kk = 0;
                if (k.op == "aten::linear" && rank(0) >= 2 && rank(1) == 2) {
                    m = 1;
                    for (std::size_t x = 0; x + 1 < rank(0); ++x)
                        m *= dim(0, x);
                    kk = dim(0, rank(0) - 1);
                    n = dim(1, 0);
                } else if (rank(ia) == 2 && rank(ia + 1) == 2) {
                    m = dim(ia, 0);
                    kk = dim(ia, 1);
                    n = dim(ia + 1, 1);
                }
                if (m > 0 && n > 0 && kk > 0) {
                    k.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) *
                              static_cast<double>(kk);
                    // cuBLAS sees C^T = B^T A^T (column-major): its A is torch's b.
                    std::string layout = "NN";
                    if (shape_op->strides >= 0 && k.op != "aten::linear") {
                        const Dims& st = p.dims[static_cast<std::size_t>(shape_op->strides)];
                        auto op_of = [&](std::size_t in) {
                            return in < st.size() && st[in].size() == 2 && st[in][1] != 1 ? 'T'
                                                                                          : 'N';
                        };
                        layout = {op_of(ia + 1), op_of(ia)};
                    } else if (k.op == "aten::linear")
                        layout = "TN";
                    if (k.dtype) {
                        auto it =
                            gemm_by_op
                                .emplace(op, GemmInstance{n, m, kk, *k.dtype, layout, 0, ks.size()})
                                .first;
                        it->second.ns += e.dur;
                    }
                }
            } else if (k.kernel_class == KernelClass::attention) {
                const bool sdpa_op = contains(k.op, "scaled_dot_product") ||
                                     contains(k.op, "flash_attention") ||
                                     contains(k.op, "efficient_attention");
                const bool backward = contains(k.op, "backward");
                if (sdpa_op) {
                    // q [B, H, S, D]; k [B, H, Skv, D] (SDPA's layout); backward: grad_out first.
                    const std::size_t q = backward ? 1 : 0;
                    if (rank(q) == 4 && rank(q + 1) == 4) {
                        const std::int64_t bh = dim(q, 0) * dim(q, 1), s = dim(q, 2),
                                           skv = dim(q + 1, 2), d = dim(q, 3);
                        bool causal = false;
                        const int ci = causal_index(k.op);
                        if (ci >= 0 && shape_op->concrete >= 0) {
                            const auto& c =
                                p.string_lists[static_cast<std::size_t>(shape_op->concrete)];
                            causal = static_cast<std::size_t>(ci) < c.size() && c[ci] >= 0 &&
                                     p.names[static_cast<std::size_t>(c[ci])] == "True";
                        }
                        if (s == skv)
                            k.flops = hardware::ComputeModel::fused_attention_flops(
                                bh, s, d, causal, backward);
                        else
                            k.flops = 4.0 * static_cast<double>(bh) * static_cast<double>(s) *
                                      static_cast<double>(skv) * static_cast<double>(d) *
                                      (backward ? 2.5 : 1.0);
                    }
                } else if (rank(k.op == "aten::baddbmm" ? 1 : 0) == 3) {
                    const std::size_t ia = k.op == "aten::baddbmm" ? 1 : 0;
                    k.flops = 2.0 * static_cast<double>(dim(ia, 0)) *
                              static_cast<double>(dim(ia, 1)) * static_cast<double>(dim(ia, 2)) *
                              static_cast<double>(dim(ia + 1, 2));
                }
            } else {
                double bytes = 0;
                for (std::size_t x = 0; x < dims.size() && x < types.size(); ++x) {
                    const auto n = numel(dims[x]);
                    if (n && types[x].bytes > 0 && !dims[x].empty())
                        bytes += *n * static_cast<double>(types[x].bytes);
                }
                if (bytes >= 1 && bytes < 1e15)
                    k.bytes = static_cast<std::int64_t>(bytes);
            }
        }
        tk.kernel_class = k.kernel_class;
        tk.name = static_cast<int>(out.names.size());
        out.names.push_back(kname);
        if (!k.op.empty()) {
            tk.op = static_cast<int>(out.names.size());
            out.names.push_back(k.op);
        }
        out.kernels.push_back(tk);

        if (tk.step >= 0 || out.steps.empty()) {
            // Aggregate: one point per (class, op, kernel, phase, layer, dtype, shapes, stream).
            std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|", static_cast<int>(k.kernel_class),
                                          k.op, k.kernel, k.phase, k.layer,
                                          k.dtype ? static_cast<int>(*k.dtype) : -1, k.stream);
            for (const auto& s : k.shapes)
                key += fmt::format("[{}]", fmt::join(s, ","));
            auto [it, inserted] = groups.emplace(key, ks.size());
            if (inserted) {
                k.calls = 0;
                k.time = sim::Time::zero();
                k.source = fmt::format("{}: traceEvents[{}]", name, e.index);
                ks.push_back(std::move(k));
            }
            KernelMeasurement& g = ks[it->second];
            ++g.calls;
            g.time += tk.duration;
            if (tk.step >= 0) {
                ++kernels_per_step[static_cast<std::size_t>(tk.step)];
                busy_per_step[static_cast<std::size_t>(tk.step)].emplace_back(e.ts, e.ts + e.dur);
            } else
                busy.emplace_back(e.ts, e.ts + e.dur);
        }
    }
    // Kernels have zero time only when the trace rounds them to 0: drop such groups.
    std::erase_if(ks, [](const KernelMeasurement& k) { return k.time <= sim::Time::zero(); });
    if (no_launch > 0)
        r.warnings.push_back(fmt::format("{}: {} kernels have no launch call or op in the trace "
                                         "(class 'other')",
                                         name, no_launch));

    // GEMMs: per shape, the median over op calls of the op's kernels' time.
    {
        std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int, std::string>,
                 std::pair<std::vector<std::int64_t>, std::size_t>>
            by_shape;
        for (const auto& [op, g] : gemm_by_op) {
            (void)op;
            if (g.ns <= 0)
                continue;
            auto& v = by_shape[{g.m, g.n, g.k, static_cast<int>(g.dtype), g.layout}];
            if (v.first.empty())
                v.second = g.first;
            v.first.push_back(g.ns);
        }
        for (auto& [key, v] : by_shape) {
            auto& times = v.first;
            std::sort(times.begin(), times.end());
            const std::size_t n = times.size();
            const std::int64_t median =
                n % 2 == 1 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
            GemmMeasurement g;
            g.m = std::get<0>(key);
            g.n = std::get<1>(key);
            g.k = std::get<2>(key);
            g.dtype = static_cast<hardware::Dtype>(std::get<3>(key));
            g.layout = std::get<4>(key);
            g.library = "torch";
            g.time = sim::Time::ns(std::max<std::int64_t>(median, 1));
            g.source = fmt::format("{}: {} calls", name, n);
            r.measurements.gemms.push_back(g);
        }
    }

    // Launch overhead: the median launch call, kept with the whole step (as a `launches` point
    // it would collide with the same count of another trace's).
    sim::Time launch_median = sim::Time::zero();
    if (!launch_ns.empty()) {
        std::sort(launch_ns.begin(), launch_ns.end());
        launch_median = sim::Time::ns(std::max<std::int64_t>(launch_ns[launch_ns.size() / 2], 0));
    }

    // The whole step.
    auto union_ns = [](std::vector<std::pair<std::int64_t, std::int64_t>> v) {
        std::sort(v.begin(), v.end());
        std::int64_t total = 0, cur_s = 0, cur_e = std::numeric_limits<std::int64_t>::min();
        for (auto [s, e] : v) {
            if (s > cur_e) {
                if (cur_e > cur_s)
                    total += cur_e - cur_s;
                cur_s = s;
                cur_e = e;
            } else
                cur_e = std::max(cur_e, e);
        }
        if (cur_e > cur_s)
            total += cur_e - cur_s;
        return total;
    };
    if (out.steps.empty()) {
        r.warnings.push_back(name + ": no ProfilerStep# ranges (call prof.step() once per "
                                    "iteration): the whole trace is taken as one step");
        std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = 0;
        for (const auto& k : out.kernels) {
            first = std::min(first, k.start.picoseconds() / 1000);
            last = std::max(last, (k.start + k.duration).picoseconds() / 1000);
        }
        if (last > first) {
            TraceStepMeasurement t;
            t.steps = 1;
            t.time = sim::Time::ns(last - first);
            t.busy = std::min(t.time, sim::Time::ns(union_ns(busy)));
            t.launch = launch_median;
            t.kernels = static_cast<std::int64_t>(out.kernels.size());
            t.source = name;
            if (t.busy > sim::Time::zero())
                r.measurements.trace_steps.push_back(t);
        }
    } else {
        std::int64_t total = 0, total_busy = 0, total_kernels = 0;
        for (std::size_t s = 0; s < out.steps.size(); ++s) {
            total += (out.steps[s].end - out.steps[s].start).picoseconds() / 1000;
            total_busy += union_ns(busy_per_step[s]);
            total_kernels += kernels_per_step[s];
        }
        const auto n = static_cast<std::int64_t>(out.steps.size());
        TraceStepMeasurement t;
        t.steps = static_cast<int>(n);
        t.time = sim::Time::ns(std::max<std::int64_t>(total / n, 1));
        t.busy = std::min(t.time, sim::Time::ns(std::max<std::int64_t>(total_busy / n, 1)));
        t.launch = launch_median;
        t.kernels = total_kernels / n;
        t.source = fmt::format("{}: {} to {}", name, out.steps.front().name, out.steps.back().name);
        r.measurements.trace_steps.push_back(t);
        // Per step: kernels' times are summed over the steps; make them per step.
        // (Kept as totals with `calls`; TraceStepMeasurement::steps says over how many.)
        if (!options.step_settings.empty()) {
            StepMeasurement step;
            step.gpus = env.device_count;
            for (const auto& s : options.step_settings)
                apply_setting(step, s, "--set");
            step.time = t.time;
            step.source = t.source;
            r.measurements.steps.push_back(step);
        }
    }
    if (options.step_settings.empty())
        r.warnings.push_back(name + ": the step is not recorded as a training step (the trace "
                                    "does not say the model): pass --set model.kind=transformer "
                                    "--set model.hidden=... to record it");
    return out;
}

ImportResult import_kineto(std::string_view text, const std::string& name,
                           const ImportOptions& options) {
    return read_kineto_trace(text, name, options).imported;
}

} // namespace clustersim::calibrate
