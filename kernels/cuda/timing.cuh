// Timing GPU work the way the benchmarks report it: CUDA events around each
// run, the median of `repeats` runs after `warmups` untimed ones; and the
// same for work captured once as a CUDA graph and replayed.
#pragma once

#include <algorithm>
#include <vector>

#include <cuda_runtime.h>

#include "cuda_check.cuh"

namespace kvplan::gpu {

template <typename F>
double median_ms(F launch, cudaStream_t stream, int repeats, int warmups = 1) {
    cudaEvent_t start, stop;
    KV_CUDA(cudaEventCreate(&start));
    KV_CUDA(cudaEventCreate(&stop));
    for (int w = 0; w < warmups; ++w) launch();
    std::vector<float> ms;
    for (int r = 0; r < repeats; ++r) {
        KV_CUDA(cudaEventRecord(start, stream));
        launch();
        KV_CUDA(cudaEventRecord(stop, stream));
        KV_CUDA(cudaEventSynchronize(stop));
        float t = 0;
        KV_CUDA(cudaEventElapsedTime(&t, start, stop));
        ms.push_back(t);
    }
    KV_CUDA(cudaEventDestroy(start));
    KV_CUDA(cudaEventDestroy(stop));
    std::sort(ms.begin(), ms.end());
    const std::size_t n = ms.size();  // for an even count, the mean of the two middle values
    return n % 2 == 1 ? ms[n / 2] : (static_cast<double>(ms[n / 2 - 1]) + ms[n / 2]) / 2;
}

// Captures what `enqueue` launches on `stream` as one CUDA graph, then times its replays.
template <typename F>
double graph_median_ms(F enqueue, cudaStream_t stream, int repeats, int warmups = 3) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    KV_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    enqueue();
    KV_CUDA(cudaStreamEndCapture(stream, &graph));
    KV_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    const double ms = median_ms([&] { KV_CUDA(cudaGraphLaunch(exec, stream)); }, stream, repeats, warmups);
    KV_CUDA(cudaGraphExecDestroy(exec));
    KV_CUDA(cudaGraphDestroy(graph));
    return ms;
}

}  // namespace kvplan::gpu
