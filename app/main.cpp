#include "app/cli.h"

#include <iostream>

int main(int argc, char** argv) {
    std::ios::sync_with_stdio(false);
    return clustersim::app::run_cli(argc, argv, {std::cout, std::cerr});
}
