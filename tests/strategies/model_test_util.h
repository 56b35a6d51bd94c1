#pragma once
// Shared helper of the model-file tests (test_model_loader, test_model_features).

#include "base/error.h"
#include "strategies/models/model_loader.h"

#include <string>

/// The error a model file's text is refused with ("(no error)" when it loads).
inline std::string load_error(const std::string& text) {
    try {
        (void)clustersim::strategies::models::parse_model_yaml(text, "model.yaml");
    } catch (const clustersim::InputError& e) {
        return e.what();
    }
    return "(no error)";
}
