// Catch2 v2's main(), compiled once into kvplan_catch_main, which every test
// executable links (tests/CMakeLists.txt).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
