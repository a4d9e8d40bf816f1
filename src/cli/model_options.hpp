// The flags every command that takes a model shares: --model (a config.json,
// a model folder or a preset) or a hand-built shape (--layers --kv-heads
// --head-dim [--hidden --heads --params]) for models with no config at all.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "core/model/config_parser.hpp"
#include "core/model/model_spec.hpp"

namespace kvplan {

struct ModelOptions {
    std::string model;                  // --model
    ManualShape shape;                  // --layers --kv-heads --head-dim --hidden --heads --params (0: not given)
    std::string weights_from = "auto";  // --weights-from auto|files|formula
};

// --model, --weights-from and the hand-built shape group.
void add_model_options(CLI::App& app, ModelOptions& options);
// --model and --weights-from only: for `measure`, which builds a real model's
// layers and whose own --layers is the number of layers it times.
void add_model_source_options(CLI::App& app, ModelOptions& options);

// Loads the model the flags describe. Throws Error(Usage) for a bad
// combination, Error(Data) for a bad config.
ModelSpec resolve_model(const ModelOptions& options);

// "llama-3.1-8b (meta-llama/Llama-3.1-8B-Instruct, llama)" for headings; a
// model from the HF cache "meta-llama/Llama-3.1-8B-Instruct@0e9e39f249a1 (HF cache, llama)".
std::string model_label(const ModelSpec& spec);

// Parses --kv-dtype / --weights-dtype values; "auto" gives nullopt.
std::optional<Dtype> parse_dtype_flag(const std::string& flag, const std::string& value);

// Parses --mamba-cache-dtype / --mamba-ssm-cache-dtype: auto, fp32, fp16 or
// bf16 only, as vLLM accepts for recurrent state (vllm/config/cache.py MambaDType).
std::optional<Dtype> parse_state_dtype_flag(const std::string& flag, const std::string& value);

}  // namespace kvplan
