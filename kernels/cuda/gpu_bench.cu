// kvplan-gpu-bench: the GPU microbenchmarks as one standalone program that
// needs only the CUDA toolkit (no kvplan build, no Debian -dev packages), so it
// builds on any GPU machine. `kvplan measure --device cuda` runs it and reads
// its JSON; kernels/gpu-check.sh builds and runs it on a lent GPU.
//
//   kvplan-gpu-bench --probe                      the device's name and memory, one line (exit 69 without a GPU)
//   kvplan-gpu-bench --check                      correctness against the CPU references; exit 1 on a mismatch
//   kvplan-gpu-bench [shape and sweep flags]      measurements, as JSON on stdout
//
// Shape: --hidden --heads --kv-heads --head-dim --intermediate --layers (the
// model's) --sample K (layers built; the rest are scaled). Sweep: --batch
// 1,16,64 --context 1024,8192 --prompt 512 --kv-dtype bf16|fp8 --repeats 20
// --bandwidth-bytes 4294967296. No GPU: one line on stderr, exit 69.
#include <cuda_fp8.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bandwidth.cuh"
#include "cuda_check.cuh"
#include "decode_model.cuh"
#include "paged_attention.cuh"
#include "reference.hpp"

using namespace kvplan::gpu;

namespace {

constexpr int kExitUnavailable = 69;

struct Options {
    ModelShape shape;
    int sample = 2;
    std::vector<int> batches{1, 16, 64};
    std::vector<int> contexts{1024, 8192};
    std::vector<int> prompts{512};
    KvType kv = KvType::Bf16;
    int repeats = 20;
    std::size_t bandwidth_bytes = std::size_t{4} << 30;
    bool check = false;
    bool probe = false;
};

std::vector<int> int_list(const char* text) {
    std::vector<int> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
    return out;
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        if (a == "--check") o.check = true;
        else if (a == "--probe") o.probe = true;
        else if (a == "--hidden") o.shape.hidden = std::stoi(next());
        else if (a == "--heads") o.shape.heads = std::stoi(next());
        else if (a == "--kv-heads") o.shape.kv_heads = std::stoi(next());
        else if (a == "--head-dim") o.shape.head_dim = std::stoi(next());
        else if (a == "--intermediate") o.shape.intermediate = std::stoi(next());
        else if (a == "--layers") o.shape.layers = std::stoi(next());
        else if (a == "--sample") o.sample = std::stoi(next());
        else if (a == "--batch") o.batches = int_list(next());
        else if (a == "--context") o.contexts = int_list(next());
        else if (a == "--prompt") o.prompts = int_list(next());
        else if (a == "--repeats") o.repeats = std::stoi(next());
        else if (a == "--bandwidth-bytes") o.bandwidth_bytes = std::stoull(next());
        else if (a == "--kv-dtype") {
            const std::string v = next();
            if (v != "bf16" && v != "fp8") throw std::invalid_argument("--kv-dtype: expected bf16 or fp8");
            o.kv = v == "fp8" ? KvType::Fp8E4m3 : KvType::Bf16;
        } else throw std::invalid_argument("unknown flag " + a);
    }
    if (o.sample < 1 || o.sample > o.shape.layers) throw std::invalid_argument("--sample must be in [1, --layers]");
    if (o.repeats < 1) throw std::invalid_argument("--repeats must be at least 1");
    return o;
}

// --- correctness: paged attention against the CPU reference ---------------------------------------------

std::uint32_t lcg(std::uint32_t& s) { return s = s * 1664525u + 1013904223u; }

// A pseudo-random multiple of 1/divisor in [-1000/divisor, 1000/divisor], as
// bf16 (the top half of its fp32 bits).
std::uint16_t random_bf16(std::uint32_t& seed, float divisor) {
    const float f = static_cast<float>(static_cast<int>(lcg(seed) >> 9) % 2001 - 1000) / divisor;
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<std::uint16_t>(bits >> 16);
}

// Largest |gpu - reference| over one configuration. The GPU result is rounded to
// bf16 (relative error at most 2^-9) and is a convex combination of cache values
// of magnitude below 1, so it is within 2^-9 + float accumulation (about 1e-5)
// of the reference; the check allows 4e-3.
double check_attention(int seqs, int heads, int kv_heads, int head_dim, KvType kv, int max_len, int splits_hint) {
    const int block = 16, max_blocks = (max_len + block - 1) / block;
    const bool fp8 = kv == KvType::Fp8E4m3;
    const std::size_t elem = fp8 ? 1 : 2;
    const std::size_t blocks = static_cast<std::size_t>(seqs) * max_blocks;
    const std::size_t cache_elems = blocks * block * kv_heads * head_dim;
    std::uint32_t seed = 12345u + head_dim + 7u * heads + (fp8 ? 99u : 0u);
    reference::PagedCache c;
    c.heads = heads;
    c.kv_heads = kv_heads;
    c.head_dim = head_dim;
    c.block_size = block;
    c.max_blocks = max_blocks;
    c.fp8 = fp8;
    c.k.resize(cache_elems * elem);
    c.v.resize(cache_elems * elem);
    for (auto* cache : {&c.k, &c.v})
        for (std::size_t i = 0; i < cache_elems; ++i) {
            if (fp8) {
                const std::uint32_t r = lcg(seed) >> 8;
                (*cache)[i] = static_cast<std::uint8_t>((r & 0x80u) | (r % 0x38u));  // |v| < 1, never NaN
            } else {
                const std::uint16_t h = random_bf16(seed, 1000.0f);
                std::memcpy(cache->data() + 2 * i, &h, 2);
            }
        }
    c.block_table.resize(blocks);
    for (std::size_t i = 0; i < blocks; ++i) c.block_table[i] = static_cast<int>((i * 7919u) % blocks);  // a permutation (7919 is prime)
    for (int s = 0; s < seqs; ++s) c.context_lens.push_back(1 + static_cast<int>(lcg(seed) % static_cast<std::uint32_t>(max_len)));
    std::vector<std::uint16_t> q(static_cast<std::size_t>(seqs) * heads * head_dim);
    for (auto& x : q) x = random_bf16(seed, 250.0f);
    const std::vector<float> expected = reference::paged_attention(c, q);

    void *dk, *dv, *dq, *dout;
    int *dtable, *dlens;
    float* ws;
    KV_CUDA(cudaMalloc(&dk, c.k.size()));
    KV_CUDA(cudaMalloc(&dv, c.v.size()));
    KV_CUDA(cudaMalloc(&dq, q.size() * 2));
    KV_CUDA(cudaMalloc(&dout, q.size() * 2));
    KV_CUDA(cudaMalloc(&dtable, blocks * sizeof(int)));
    KV_CUDA(cudaMalloc(&dlens, seqs * sizeof(int)));
    KV_CUDA(cudaMemcpy(dk, c.k.data(), c.k.size(), cudaMemcpyHostToDevice));
    KV_CUDA(cudaMemcpy(dv, c.v.data(), c.v.size(), cudaMemcpyHostToDevice));
    KV_CUDA(cudaMemcpy(dq, q.data(), q.size() * 2, cudaMemcpyHostToDevice));
    KV_CUDA(cudaMemcpy(dtable, c.block_table.data(), blocks * sizeof(int), cudaMemcpyHostToDevice));
    KV_CUDA(cudaMemcpy(dlens, c.context_lens.data(), seqs * sizeof(int), cudaMemcpyHostToDevice));
    PagedAttention p;
    p.q = static_cast<const __nv_bfloat16*>(dq);
    p.k_cache = dk;
    p.v_cache = dv;
    p.block_table = dtable;
    p.context_lens = dlens;
    p.seqs = seqs;
    p.heads = heads;
    p.kv_heads = kv_heads;
    p.head_dim = head_dim;
    p.block_size = block;
    p.max_blocks = max_blocks;
    p.max_context = max_len;
    p.kv_type = kv;
    p.out = static_cast<__nv_bfloat16*>(dout);
    const int splits = splits_hint > 0 ? splits_hint : paged_attention_splits(p, 132);
    KV_CUDA(cudaMalloc(&ws, paged_attention_workspace_bytes(p, splits)));
    paged_attention(p, splits, ws, nullptr);
    KV_CUDA(cudaDeviceSynchronize());
    std::vector<std::uint16_t> got(q.size());
    KV_CUDA(cudaMemcpy(got.data(), dout, got.size() * 2, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(reference::bf16_to_float(got[i])) - expected[i]));
    for (void* ptr : {dk, dv, dq, dout, static_cast<void*>(dtable), static_cast<void*>(dlens), static_cast<void*>(ws)}) cudaFree(ptr);
    return worst;
}

int run_checks() {
    struct Case {
        int seqs, heads, kv_heads, head_dim;
        KvType kv;
        int max_len, splits;
    };
    const Case cases[] = {
        {3, 32, 8, 128, KvType::Bf16, 300, 1},  {3, 32, 8, 128, KvType::Bf16, 1000, 4}, {2, 8, 8, 64, KvType::Bf16, 77, 3},
        {2, 16, 1, 128, KvType::Bf16, 530, 2},  {2, 16, 2, 256, KvType::Bf16, 200, 2},  {3, 32, 8, 128, KvType::Fp8E4m3, 1000, 4},
        {2, 28, 4, 128, KvType::Fp8E4m3, 65, 1}, {1, 64, 8, 128, KvType::Bf16, 4100, 0},
    };
    int failures = 0;
    std::printf("{\n  \"check\": [\n");
    for (std::size_t i = 0; i < std::size(cases); ++i) {
        const Case& c = cases[i];
        const double err = check_attention(c.seqs, c.heads, c.kv_heads, c.head_dim, c.kv, c.max_len, c.splits);
        const bool ok = err <= 4e-3;
        failures += ok ? 0 : 1;
        std::printf("    {\"kernel\": \"paged_attention\", \"seqs\": %d, \"heads\": %d, \"kv_heads\": %d, \"head_dim\": %d, \"kv_dtype\": \"%s\", "
                    "\"max_context_tokens\": %d, \"splits\": %d, \"max_abs_error\": %.3g, \"tolerance\": 0.004, \"passed\": %s}%s\n",
                    c.seqs, c.heads, c.kv_heads, c.head_dim, c.kv == KvType::Bf16 ? "bf16" : "fp8", c.max_len, c.splits, err, ok ? "true" : "false",
                    i + 1 < std::size(cases) ? "," : "");
    }
    std::printf("  ],\n  \"passed\": %s\n}\n", failures == 0 ? "true" : "false");
    return failures == 0 ? 0 : 1;
}

// --- measurements ------------------------------------------------------------------------------------------

// One decode or prefill row: `keys` names the step ("\"prompt_tokens\": 128"),
// then the time, whole and per component, scaled from the sampled layers to all.
void print_step(const std::string& keys, const StepMs& t, double scale, bool last) {
    std::printf("    {%s, \"measured_s\": %.9g, \"components_s\": {\"qkv\": %.9g, \"attention\": %.9g, \"o_proj\": %.9g, \"mlp\": %.9g, "
                "\"other\": %.9g}}%s\n",
                keys.c_str(), t.total * 1e-3 * scale, t.qkv * 1e-3 * scale, t.attention * 1e-3 * scale, t.o_proj * 1e-3 * scale,
                t.mlp * 1e-3 * scale, t.other * 1e-3 * scale, last ? "" : ",");
}

int run_measure(const Options& o) {
    cudaDeviceProp prop;
    KV_CUDA(cudaGetDeviceProperties(&prop, 0));
    std::size_t free_bytes = 0, total = 0;
    KV_CUDA(cudaMemGetInfo(&free_bytes, &total));
    const Bandwidth bw = measure_bandwidth(std::min(o.bandwidth_bytes, free_bytes / 4), o.repeats);
    const double scale = static_cast<double>(o.shape.layers) / o.sample;
    std::printf("{\n  \"schema_version\": 1,\n  \"device\": \"%s\",\n  \"compute_capability\": \"%d.%d\",\n  \"multiprocessors\": %d,\n", prop.name,
                prop.major, prop.minor, prop.multiProcessorCount);
    std::printf("  \"memory_bytes\": %zu,\n  \"free_memory_bytes\": %zu,\n", total, free_bytes);
    std::printf("  \"bandwidth\": {\"buffer_bytes\": %zu, \"read_bytes_per_s\": %.6g, \"copy_bytes_per_s\": %.6g},\n", bw.buffer_bytes, bw.read_bytes_per_s,
                bw.copy_bytes_per_s);
    std::printf("  \"measured_bandwidth_bytes_per_s\": %.6g,\n", bw.read_bytes_per_s);
    std::printf("  \"kv_dtype\": \"%s\",\n  \"layers_measured\": %d,\n  \"layers_total\": %d,\n", o.kv == KvType::Bf16 ? "bf16" : "fp8", o.sample,
                o.shape.layers);
    int max_context = 0, max_prompt = 0;
    for (int c : o.contexts) max_context = std::max(max_context, c);
    for (int p : o.prompts) max_prompt = std::max(max_prompt, p);
    double flops = 0;
    std::printf("  \"decode\": [\n");
    for (std::size_t bi = 0; bi < o.batches.size(); ++bi) {
        GpuModel model(o.shape, o.sample, o.batches[bi], std::max(max_context + 1, max_prompt), o.kv);
        if (bi == 0) flops = model.gemm_flops(4096, o.repeats);
        for (std::size_t ci = 0; ci < o.contexts.size(); ++ci) {
            const std::string keys = "\"batch\": " + std::to_string(o.batches[bi]) + ", \"context_tokens\": " + std::to_string(o.contexts[ci]);
            print_step(keys, model.decode(o.contexts[ci], o.repeats), scale, bi + 1 == o.batches.size() && ci + 1 == o.contexts.size());
            std::fflush(stdout);
        }
    }
    std::printf("  ],\n  \"prefill\": [\n");
    {
        GpuModel model(o.shape, o.sample, 1, std::max(max_prompt, 1), o.kv);
        for (std::size_t pi = 0; pi < o.prompts.size(); ++pi)
            print_step("\"prompt_tokens\": " + std::to_string(o.prompts[pi]), model.prefill(o.prompts[pi], o.repeats), scale,
                       pi + 1 == o.prompts.size());
    }
    std::printf("  ],\n  \"measured_flops_per_s\": %.6g\n}\n", flops);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        std::fprintf(stderr, "kvplan-gpu-bench: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return kExitUnavailable;
    }
    try {
        const Options o = parse(argc, argv);
        if (o.probe) {
            cudaDeviceProp prop;
            KV_CUDA(cudaGetDeviceProperties(&prop, 0));
            std::printf("%s, %.1f GiB, compute capability %d.%d\n", prop.name, static_cast<double>(prop.totalGlobalMem) / (1 << 30), prop.major, prop.minor);
            return 0;
        }
        return o.check ? run_checks() : run_measure(o);
    } catch (const std::invalid_argument& err) {
        std::fprintf(stderr, "kvplan-gpu-bench: error: %s\n", err.what());
        return 2;
    } catch (const std::exception& err) {
        std::fprintf(stderr, "kvplan-gpu-bench: error: %s\n", err.what());
        return 1;
    }
}
