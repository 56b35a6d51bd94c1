#include "app/svg_canvas.h"

#include <cstddef>

namespace clustersim::app::plot_detail {

double fitted_font(std::string_view text, double font, double width) {
    const double w = text_width(text, font);
    return w <= width ? font : std::max(9.0, std::floor(font * width / w * 10) / 10);
}

std::string fitted_text(std::string_view text, double font, double width) {
    if (text_width(text, font) <= width)
        return std::string(text);
    const std::string_view ellipsis = "\xE2\x80\xA6";
    std::size_t n = text.size();
    while (n > 0) {
        --n;
        while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0u) == 0x80u)
            --n; // not inside a multi-byte character
        if (text_width(text.substr(0, n), font) + text_width(ellipsis, font) <= width)
            break;
    }
    return std::string(text.substr(0, n)) + std::string(ellipsis);
}

void heading(Svg& svg, double x, double y, double right, std::string_view text, double font,
             std::string_view color, std::string_view extra) {
    const double size = fitted_font(text, font, right - x);
    svg.text(x, y, fitted_text(text, size, right - x), size, "start", color, extra);
}

void thin_labels(std::vector<Tick>& ticks, const Mapper& m) {
    std::vector<std::size_t> labelled;
    for (std::size_t i = 0; i < ticks.size(); ++i)
        if (!ticks[i].label.empty() && m.contains(ticks[i].value))
            labelled.push_back(i);
    const auto fits = [&](std::size_t k) {
        for (std::size_t j = 0; j + k < labelled.size(); j += k) {
            const Tick& a = ticks[labelled[j]];
            const Tick& b = ticks[labelled[j + k]];
            const double gap =
                std::abs(m(b.value) - m(a.value)) -
                (text_width(a.label, kTickFont) + text_width(b.label, kTickFont)) / 2;
            if (gap < 8)
                return false;
        }
        return true;
    };
    std::size_t k = 1;
    while (k < labelled.size() && !fits(k))
        ++k;
    for (std::size_t j = 0; j < labelled.size(); ++j)
        if (j % k != 0) {
            ticks[labelled[j]].label.clear();
            ticks[labelled[j]].major = false;
        }
}

HeadingRows heading_rows(std::string_view title, std::string_view subtitle) {
    HeadingRows rows;
    double top = 16;
    rows.title_y = top + kTitleFont;
    if (!title.empty())
        top = rows.title_y + 8;
    rows.subtitle_y = top + kSubtitleFont;
    if (!subtitle.empty())
        top = rows.subtitle_y + 8;
    rows.bottom = top;
    return rows;
}

} // namespace clustersim::app::plot_detail
