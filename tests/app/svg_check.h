#pragma once
// A small checker of the SVG the plotting module writes, for the tests: well-formed XML (one
// root, balanced tags, quoted attributes, only the five predefined entities, no markup in
// text), every numeric attribute a finite number, and the elements with their attributes and
// the id of the innermost enclosing <g id="..."> so that tests can check geometry.

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace clustersim::test {

struct SvgElement {
    std::string name;
    std::map<std::string, std::string> attrs;
    std::string group; ///< id of the innermost enclosing <g> with an id, or ""
    std::string text;  ///< character data directly inside (for <text> and <title>)

    double num(const std::string& key) const {
        const auto it = attrs.find(key);
        return it == attrs.end() ? std::nan("") : std::strtod(it->second.c_str(), nullptr);
    }
    bool has(const std::string& key) const { return attrs.count(key) > 0; }
};

struct SvgDoc {
    std::string error; ///< empty when the document is well-formed
    std::vector<SvgElement> elements;

    std::vector<const SvgElement*> find(const std::string& name,
                                        const std::string& group = "*") const {
        std::vector<const SvgElement*> out;
        for (const auto& e : elements)
            if (e.name == name && (group == "*" || e.group == group))
                out.push_back(&e);
        return out;
    }
};

inline bool valid_entities(const std::string& s) {
    for (std::size_t i = s.find('&'); i != std::string::npos; i = s.find('&', i + 1)) {
        bool ok = false;
        for (const char* ent : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
            if (s.compare(i, std::char_traits<char>::length(ent), ent) == 0)
                ok = true;
        if (!ok)
            return false;
    }
    return true;
}

inline std::string unescape(std::string s) {
    const std::pair<const char*, const char*> ents[] = {
        {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}};
    for (const auto& [from, to] : ents)
        for (std::size_t i = s.find(from); i != std::string::npos; i = s.find(from, i + 1))
            s.replace(i, std::char_traits<char>::length(from), to);
    return s;
}

inline SvgDoc check_svg(const std::string& doc) {
    SvgDoc out;
    const auto fail = [&](const std::string& why, std::size_t at) {
        out.error = why + " at offset " + std::to_string(at);
        return out;
    };
    static const std::set<std::string> numeric = {"x",
                                                  "y",
                                                  "width",
                                                  "height",
                                                  "x1",
                                                  "y1",
                                                  "x2",
                                                  "y2",
                                                  "cx",
                                                  "cy",
                                                  "r",
                                                  "stroke-width",
                                                  "font-size",
                                                  "fill-opacity",
                                                  "stroke-opacity",
                                                  "rx"};
    std::size_t i = 0;
    if (doc.compare(0, 5, "<?xml") == 0) {
        i = doc.find("?>");
        if (i == std::string::npos)
            return fail("unterminated prolog", 0);
        i += 2;
    }
    struct Open {
        std::string name;
        std::string group;
        std::size_t element;
    };
    std::vector<Open> stack;
    int roots = 0;
    while (i < doc.size()) {
        const std::size_t lt = doc.find('<', i);
        const std::string text = doc.substr(i, (lt == std::string::npos ? doc.size() : lt) - i);
        if (text.find('>') != std::string::npos || !valid_entities(text))
            return fail("bad character data", i);
        if (stack.empty() && text.find_first_not_of(" \n\r\t") != std::string::npos)
            return fail("text outside the root", i);
        if (!stack.empty())
            out.elements[stack.back().element].text += unescape(text);
        if (lt == std::string::npos)
            break;
        const std::size_t gt = doc.find('>', lt);
        if (gt == std::string::npos)
            return fail("unterminated tag", lt);
        std::string tag = doc.substr(lt + 1, gt - lt - 1);
        i = gt + 1;
        if (!tag.empty() && tag[0] == '/') {
            const std::string name = tag.substr(1);
            if (stack.empty() || stack.back().name != name)
                return fail("unbalanced </" + name + ">", lt);
            stack.pop_back();
            continue;
        }
        const bool self_closing = !tag.empty() && tag.back() == '/';
        if (self_closing)
            tag.pop_back();
        std::size_t p = tag.find_first_of(" \n\t");
        SvgElement e;
        e.name = tag.substr(0, p);
        if (e.name.empty())
            return fail("empty tag name", lt);
        while (p != std::string::npos && p < tag.size()) {
            p = tag.find_first_not_of(" \n\t", p);
            if (p == std::string::npos)
                break;
            const std::size_t eq = tag.find('=', p);
            if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"')
                return fail("unquoted attribute in <" + e.name + ">", lt);
            const std::string key = tag.substr(p, eq - p);
            const std::size_t end = tag.find('"', eq + 2);
            if (end == std::string::npos)
                return fail("unterminated attribute", lt);
            const std::string value = tag.substr(eq + 2, end - eq - 2);
            if (value.find('<') != std::string::npos || !valid_entities(value))
                return fail("bad attribute value", lt);
            if (e.attrs.count(key))
                return fail("duplicate attribute " + key, lt);
            if (numeric.count(key) && value.find('%') == std::string::npos) {
                char* stop = nullptr;
                const double v = std::strtod(value.c_str(), &stop);
                if (stop == value.c_str() || *stop != '\0' || !std::isfinite(v))
                    return fail("non-numeric " + key + "=\"" + value + "\"", lt);
            }
            e.attrs[key] = unescape(value);
            p = end + 1;
        }
        if (e.attrs.count("d") && (e.attrs["d"].find("nan") != std::string::npos ||
                                   e.attrs["d"].find("inf") != std::string::npos))
            return fail("non-finite path", lt);
        if (stack.empty() && ++roots > 1)
            return fail("more than one root", lt);
        std::string group = stack.empty() ? "" : stack.back().group;
        if (e.name == "g" && e.attrs.count("id"))
            group = e.attrs["id"];
        e.group = stack.empty() ? "" : stack.back().group;
        out.elements.push_back(e);
        if (!self_closing)
            stack.push_back({e.name, group, out.elements.size() - 1});
    }
    if (!stack.empty())
        return fail("unclosed <" + stack.back().name + ">", doc.size());
    if (roots != 1 || out.elements.empty() || out.elements[0].name != "svg")
        return fail("the root is not <svg>", 0);
    return out;
}

} // namespace clustersim::test
