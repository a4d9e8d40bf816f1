// Hybrid and state-space models: which layers keep per-token KV, which keep a
// fixed recurrent state, and how large that state is (element formulas as
// vLLM allocates them: vllm/model_executor/layers/mamba/mamba_utils.py).
#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

TEST_CASE("Jamba-1.5-Mini: attention every 8th layer from offset 4, Mamba elsewhere, MoE every 2nd layer") {
    auto m = fixture("configs/jamba.json");
    auto s = kv(m, 8192);
    REQUIRE(s.groups.size() == 2);
    // Layers 4, 12, 20, 28 attend: 4 x 2 x 8 x 128 x 2 = 16,384 B/token.
    CHECK(s.bytes_per_token == 16'384);
    // 28 Mamba layers x ((4 - 1) x 8,192 + 8,192 x 16) elements x 2 B; d_inner = 2 x 4096.
    CHECK(s.groups[0].spec.kind == LayerKind::State);
    CHECK(s.groups[0].state_bytes_per_sequence == 28LL * (3 * 8192 + 8192 * 16) * 2);  // 8,716,288
    CHECK(s.bytes_per_sequence == 16'384LL * 8192 + 8'716'288);
    // 16 experts on the odd layers, 2 active per token.
    auto w = size_weights(m);
    CHECK(w.active_params < w.params / 3);
}

TEST_CASE("Nemotron-H-8B: hybrid_override_pattern '*' attention, 'M' Mamba-2, '-' MLP only") {
    auto m = fixture("configs/nemotron-h.json");
    auto s = kv(m, 8192);
    CHECK(s.bytes_per_token == 4 * 2 * 8 * 128 * 2);  // four '*' layers
    // Mamba-2: d_inner = 128 heads x 64 = 8,192; conv dim = 8,192 + 2 x 8 groups x 128 = 10,240;
    // state = 3 x 10,240 + 8,192 x 128 = 1,079,296 elements x 2 B = 2,158,592 B; 24 'M' layers.
    const LayerGroup* state = nullptr;
    const LayerGroup* none = nullptr;
    for (const auto& g : s.groups) {
        if (g.spec.kind == LayerKind::State) state = &g;
        if (g.spec.kind == LayerKind::None) none = &g;
    }
    REQUIRE(state);
    REQUIRE(none);
    CHECK(state->layers == 24);
    CHECK(state->state_bytes_per_sequence == 24LL * 2'158'592);
    CHECK(none->layers == 24);
}

TEST_CASE("pure Mamba-2: every layer a fixed state") {
    auto m = fixture("constructed/mamba2.json");
    auto s = kv(m, 1);
    CHECK(s.bytes_per_token == 0);
    CHECK(s.bytes_per_sequence == 64LL * 1'079'296 * 2);
}

TEST_CASE("Mamba-2 with one group at TP 2: vLLM replicates the group so each head shard has B and C, and the conv state grows") {
    // d_inner = 128 heads x 64 = 8,192; conv state (4 - 1) x (8,192 + 2 x 1 x 128)
    // = 25,344 elements; SSM state 8,192 x 128 = 1,048,576. At TP 2 vLLM adds
    // tp - n_groups = 1 group (extra_groups_for_head_shards), so each rank
    // holds (4 - 1) x (4,096 + 2 x 128) = 13,056 conv elements and 524,288 SSM
    // elements: with a bf16 conv state and an fp32 SSM state, 26,112 + 2,097,152
    // = 2,123,264 B a layer, 768 B more than an even split of one group.
    auto m = fixture("constructed/mamba2-one-group.json");
    const LayerSpec& l = m.layers.front();
    REQUIRE(l.kind == LayerKind::State);
    CHECK(l.conv_state_elements == 25'344);
    CHECK(layer_state_bytes_per_gpu(l, 1, Dtype::Bf16, Dtype::Fp32) == 25'344 * 2 + 1'048'576 * 4);
    CHECK(layer_state_bytes_per_gpu(l, 2, Dtype::Bf16, Dtype::Fp32) == 2'123'264);
    // TP 4: n_groups becomes 4, one a rank: 3 x (2,048 + 256) = 6,912 conv elements a rank.
    CHECK(layer_state_bytes_per_gpu(l, 4, Dtype::Bf16, Dtype::Fp32) == 6'912 * 2 + 262'144 * 4);
    // Eight groups divide TP 2, 4 and 8: an even split (mamba2.json).
    const ModelSpec eight = fixture("constructed/mamba2.json");
    CHECK(layer_state_bytes_per_gpu(eight.layers.front(), 8, Dtype::Bf16, Dtype::Fp32) == (3 * 10'240 * 2 + 1'048'576 * 4) / 8);
}

TEST_CASE("Qwen3-Next: full attention every 4th layer, Gated DeltaNet state elsewhere") {
    // full_attention_interval 4: 12 full layers (2 KV heads x 256) and 36 linear layers.
    // Linear state: conv (4 - 1) x (2 x 16 x 128 + 32 x 128) + 32 x 128 x 128 = 24,576 + 524,288 elements.
    auto m = fixture("configs/qwen3-next.json");
    auto s = kv(m, 8192);
    CHECK(s.bytes_per_token == 12 * 2 * 2 * 256 * 2);  // 24,576
    CHECK(s.bytes_per_sequence == 24'576LL * 8192 + 36LL * (24'576 + 524'288) * 2);
}

TEST_CASE("state dtypes follow vLLM's mamba cache flags, not the KV dtype") {
    auto m = fixture("configs/qwen3-next.json");
    KvOptions o;
    o.context = 1;
    o.kv_dtype = Dtype::Fp8;  // halves the 12 full-attention layers only
    auto s = size_kv(m, o);
    CHECK(s.bytes_per_token == 12 * 2 * 2 * 256 * 1);
    CHECK(s.bytes_per_sequence == 12'288 + 36LL * (24'576 + 524'288) * 2);
    // --mamba-ssm-cache-dtype float32: the recurrent part doubles, the conv part stays bf16.
    o.ssm_state_dtype = Dtype::Fp32;
    CHECK(size_kv(m, o).bytes_per_sequence == 12'288 + 36LL * (24'576 * 2 + 524'288 * 4));
}

TEST_CASE("recurrent state splits across tensor-parallel ranks by heads") {
    auto m = fixture("constructed/mamba2.json");
    CHECK(kv(m, 1, 1, 4).bytes_per_sequence_per_gpu == 64LL * 1'079'296 * 2 / 4);
}

TEST_CASE("Nemotron-Super-49B (DeciLM block_configs): per-block KV heads, skipped attention, per-block MLP widths") {
    // 80 blocks: 49 attend with n_heads_in_group 8 (64 / 8 = 8 KV heads), 31 have attention no_op.
    auto m = fixture("configs/nemotron-super-49b.json");
    auto s = kv(m, 1);
    CHECK(s.bytes_per_token == 49 * 2 * 8 * 128 * 2);  // 200,704
    // A public note on this model (index id 63224824488): "Confirmed size 49,867,145,216 bf16 params".
    CHECK(size_weights(m).params == 49'867'145'216);
}

TEST_CASE("OpenELM-270M: heads, KV heads and MLP widths vary by layer") {
    // num_kv_heads [3 x5, 4 x7, 5 x4], head_dim 64: 2 x 64 x 2 x (5x3 + 7x4 + 4x5) = 16,128 B/token.
    auto m = fixture("configs/openelm-270m.json");
    CHECK(kv(m, 1).bytes_per_token == 16'128);
    // Per layer: qkv (nq + 2 nk) x 64 x 1280 + out 1280 x nq x 64 + q/k norms 2 x 64 + 2 norms x 1280
    // + 3 x 1280 x I, I = make_divisible(ffn_multiplier x 1280, 256) = 768, 1024, 1280, ..., 5120;
    // + tied embedding 32000 x 1280 + final norm 1280 = 271,527,168 (Apple's "OpenELM-270M").
    CHECK(size_weights(m).params == 271'527'168);
    // The model-wide head count is the gcd of 12, 16, 20 = 4, so TP could only be 2 or 4, and
    // neither shards 3 or 5 KV heads: this model does not split across GPUs.
    CHECK(m.heads == 4);
    CHECK_THROWS_WITH(kv(m, 1, 1, 2), Catch::Contains("cannot shard 3 KV heads"));
}
