// What the engine commands name as the checkpoint (io/model_loader.hpp
// finds it from the argument a command was given).
#pragma once

#include <string>

namespace kvplan {

// What an engine is told to load for a --model argument, resolved in
// load_model's order: a path gives the folder holding its config.json (a
// Hugging Face cache entry, its snapshot), a preset its hf_id, a repo id
// itself. Used by `recommend` to print commands that run as pasted.
struct ServedModel {
    std::string id;
    // GPTQ or AWQ settings beside config.json rather than in it: vLLM reads
    // them only when told the method (--quantization; GPTQConfig and
    // AWQConfig.get_config_filenames). ModelOpt's hf_quant_config.json it
    // finds by itself.
    bool quantization_beside_config = false;
    // A config file not named config.json: the engines read a folder's
    // config.json, so the folder printed may not be the checkpoint. Empty otherwise.
    std::string warning;
};

}  // namespace kvplan
