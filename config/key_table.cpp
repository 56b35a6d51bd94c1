#include "config/key_table.h"

namespace clustersim::config {

std::string_view to_string(KeyType t) {
    switch (t) {
    case KeyType::integer:
        return "integer";
    case KeyType::number:
        return "number";
    case KeyType::boolean:
        return "boolean";
    case KeyType::choice:
        return "choice";
    case KeyType::text:
        return "text";
    case KeyType::bytes:
        return "size";
    case KeyType::time:
        return "time";
    case KeyType::bandwidth:
        return "bandwidth";
    case KeyType::flop_rate:
        return "FLOP rate";
    case KeyType::list:
        return "list";
    case KeyType::section:
        return "mapping";
    }
    return "?";
}

const KeyInfo* find_key(const KeySection& keys, std::string_view name) {
    for (const KeyInfo* k : keys.keys) {
        if (k->name == name)
            return k;
        for (std::string_view other : k->other_names) {
            if (other == name)
                return k;
        }
    }
    return nullptr;
}

} // namespace clustersim::config
