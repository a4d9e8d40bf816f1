// kvplan's entry point: everything happens in run() (cli/app.cpp).
#include <iostream>
#include <string>
#include <vector>

#include "cli/app.hpp"

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    return kvplan::run(args, std::cout, std::cerr);
}
