#include "core/model/model_spec.hpp"

namespace kvplan {

namespace {
constexpr ModelSourceKind kSourceKinds[] = {ModelSourceKind::Manual, ModelSourceKind::Preset, ModelSourceKind::HfCache,
                                            ModelSourceKind::File,   ModelSourceKind::Folder, ModelSourceKind::Gguf};
}  // namespace

const char* model_source_name(ModelSourceKind kind) {
    switch (kind) {
        case ModelSourceKind::Manual: return "manual";
        case ModelSourceKind::Preset: return "preset";
        case ModelSourceKind::HfCache: return "hf_cache";
        case ModelSourceKind::File: return "file";
        case ModelSourceKind::Folder: return "folder";
        case ModelSourceKind::Gguf: return "gguf";
    }
    return "?";
}

std::optional<ModelSourceKind> parse_model_source(const std::string& name) {
    for (ModelSourceKind k : kSourceKinds)
        if (name == model_source_name(k)) return k;
    return std::nullopt;
}

const char* layer_kind_name(LayerKind kind) {
    switch (kind) {
        case LayerKind::Full: return "full";
        case LayerKind::Sliding: return "sliding";
        case LayerKind::Chunked: return "chunked";
        case LayerKind::Mla: return "mla";
        case LayerKind::State: return "state";
        case LayerKind::Cross: return "cross";
        case LayerKind::None: return "none";
    }
    return "?";
}

const char* param_part_name(ParamPart part) {
    switch (part) {
        case ParamPart::Embedding: return "embeddings";
        case ParamPart::Attention: return "attention";
        case ParamPart::Mlp: return "mlp";
        case ParamPart::Experts: return "experts";
        case ParamPart::SharedExperts: return "shared_experts";
        case ParamPart::Router: return "router";
        case ParamPart::Norm: return "norms";
        case ParamPart::Head: return "lm_head";
        case ParamPart::Mixer: return "ssm_mixer";
    }
    return "?";
}

const char* quant_method_name(QuantMethod method) {
    switch (method) {
        case QuantMethod::None: return "none";
        case QuantMethod::Fp8: return "fp8";
        case QuantMethod::Gptq: return "gptq";
        case QuantMethod::Awq: return "awq";
        case QuantMethod::Mxfp4: return "mxfp4";
        case QuantMethod::BitsAndBytes: return "bitsandbytes";
        case QuantMethod::CompressedTensors: return "compressed-tensors";
        case QuantMethod::ModelOpt: return "modelopt";
        case QuantMethod::FbgemmFp8: return "fbgemm_fp8";
    }
    return "?";
}

Dtype auto_kv_dtype(const ModelSpec& spec) {
    return spec.quantization.kv_cache_dtype.value_or(spec.engine_kv_dtype.value_or(serving_dtype(spec.checkpoint_dtype)));
}

}  // namespace kvplan
