#include "calibrate/kineto_events.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace clustersim::calibrate::kineto_detail {

namespace {

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

constexpr int kMaxDepth = 64;

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

} // namespace

bool parse_events(std::string_view text, Parsed& p, std::string& error) {
    p.events.reserve(text.size() / 400);
    Handler h(p);
    const bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &h,
                                              nlohmann::json::input_format_t::json, true);
    if (!ok)
        error = h.error;
    return ok;
}

} // namespace clustersim::calibrate::kineto_detail
