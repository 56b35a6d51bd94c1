#pragma once
/// \file
/// A left-to-right reader over one line, for the fixed patterns the importers look for in
/// nccl-tests logs, CSV headers and file names ("NCCL version 2.21.5", "# Rank 0 Group 0 Pid
/// 12 on host device 0 [0x07] NVIDIA H100", "time(us)", "8gpu"). Each step consumes what it
/// names or nothing, in time linear in what it reads, and nothing recurses. Why not std::regex:
/// libstdc++'s matcher recurses once per character it backtracks over, so a line of 50,000
/// spaces or a 100 kB `..._busbw` header overflowed the stack (SIGSEGV) in `calibrate import`.
/// Internal to calibrate/.

#include <cstddef>
#include <string_view>

namespace clustersim::calibrate::detail {

/// ECMAScript's `\s` over ASCII (what the patterns this replaces meant by a space).
constexpr bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
constexpr bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
/// `[A-Za-z_]`
constexpr bool is_letter_or_underscore(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
/// `\w`: letters, digits, underscore.
constexpr bool is_word_char(char c) {
    return is_letter_or_underscore(c) || is_digit(c);
}

class LineScan {
public:
    explicit LineScan(std::string_view text, std::size_t pos = 0)
        : text_(text)
        , pos_(pos) {}

    std::size_t pos() const { return pos_; }
    bool at_end() const { return pos_ >= text_.size(); }
    /// What is left of the line.
    std::string_view rest() const { return text_.substr(pos_); }

    /// Consumes `word` when the line continues with it.
    bool literal(std::string_view word) {
        if (rest().substr(0, word.size()) != word)
            return false;
        pos_ += word.size();
        return true;
    }
    /// Consumes one character when it is `c`.
    bool one(char c) { return literal(std::string_view(&c, 1)); }
    /// Consumes `\s*`; true when at least one space was there (`\s+`).
    bool spaces() { return take_while(is_space).size() > 0; }
    /// Consumes `\d+`; empty when no digit is next.
    std::string_view digits() { return take_while(is_digit); }
    /// Consumes `[A-Za-z_]+`; empty when none is next.
    std::string_view letters() { return take_while(is_letter_or_underscore); }
    /// Consumes `\S+`; empty when a space or the end is next.
    std::string_view word() {
        return take_while([](char c) { return !is_space(c); });
    }

    template <typename Pred>
    std::string_view take_while(Pred pred) {
        const std::size_t start = pos_;
        while (pos_ < text_.size() && pred(text_[pos_]))
            ++pos_;
        return text_.substr(start, pos_ - start);
    }

private:
    std::string_view text_;
    std::size_t pos_;
};

} // namespace clustersim::calibrate::detail
