// Error checking for CUDA and cuBLAS calls: every failure becomes an
// exception naming the call, so the benchmark reports it in one line.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#define KV_CUDA(call)                                                                                  \
    do {                                                                                               \
        const cudaError_t kv_err_ = (call);                                                            \
        if (kv_err_ != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(kv_err_)); \
    } while (0)

#define KV_CUBLAS(call)                                                                                \
    do {                                                                                               \
        const cublasStatus_t kv_st_ = (call);                                                          \
        if (kv_st_ != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(#call) + ": cuBLAS status " + std::to_string(static_cast<int>(kv_st_))); \
    } while (0)
