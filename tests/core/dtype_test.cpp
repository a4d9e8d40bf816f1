#include "core/dtype.hpp"

#include <catch2/catch.hpp>

using namespace kvplan;

TEST_CASE("dtype names from flags and from configs parse to the same dtype") {
    CHECK(parse_dtype("bf16") == Dtype::Bf16);
    CHECK(parse_dtype("bfloat16") == Dtype::Bf16);
    CHECK(parse_dtype("torch.bfloat16") == Dtype::Bf16);
    CHECK(parse_dtype("float16") == Dtype::Fp16);
    CHECK(parse_dtype("FP8_E4M3") == Dtype::Fp8);
    CHECK(parse_dtype("fp8_e5m2") == Dtype::Fp8);
    CHECK(parse_dtype("int4") == Dtype::Int4);
    CHECK_FALSE(parse_dtype("fp7"));
    CHECK_FALSE(parse_dtype(""));
}

TEST_CASE("auto follows vLLM: bf16 stays bf16, everything else is served as fp16") {
    CHECK(serving_dtype(Dtype::Bf16) == Dtype::Bf16);
    CHECK(serving_dtype(Dtype::Fp16) == Dtype::Fp16);
    CHECK(serving_dtype(Dtype::Fp32) == Dtype::Fp16);
    CHECK(serving_dtype(std::nullopt) == Dtype::Fp16);
}

TEST_CASE("int4 packs two elements per byte") {
    CHECK(bytes_for(1024, Dtype::Int4) == 512);
    CHECK(bytes_for(3, Dtype::Int4) == 2);  // rounded up to whole bytes
    CHECK(bytes_for(1024, Dtype::Fp32) == 4096);
}
