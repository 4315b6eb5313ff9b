/* presets.c — built-in models and clusters.
 *
 * Models: the published configurations (DeepSeek-V3 technical report and config.json; Mixtral
 * 8x7B; GPT-3 175B; Llama 3 405B). Clusters: public GPU specifications (REFERENCE.md §6) on an
 * 8-rail rail-optimized fabric of 512 nodes x 8 GPUs (seed 003). */
#include "sim/scenario/presets.h"

#include <stdio.h>
#include <string.h>

const char *const preset_model_names[] = {"deepseek-v3", "mixtral-8x7b", "gpt3-175b", "llama3-405b", NULL};
const char *const preset_cluster_names[] = {"h800-8rail", "h100-8rail", "h200-8rail", NULL};

static const model_cfg MODELS[] = {
    {.preset = "deepseek-v3", .layers = 61, .dense_layers = 3, .hidden = 7168, .heads = 128,
     .head_dim = 128, .kv_heads = 128, .q_lora_rank = 1536, .kv_lora_rank = 512, .rope_head_dim = 64,
     .v_head_dim = 128, .ffn_hidden = 18432, .ffn_act = FFN_SWIGLU, .experts = 256, .shared_experts = 1,
     .expert_hidden = 2048, .top_k = 8, .expert_groups = 8, .topk_groups = 4, .vocab = 129280,
     .seq_len = 4096, .attention = ATTN_MLA, .tie_embeddings = 0, .published_active_params = 37e9},
    {.preset = "mixtral-8x7b", .layers = 32, .dense_layers = 0, .hidden = 4096, .heads = 32,
     .head_dim = 128, .kv_heads = 8, .v_head_dim = 128, .ffn_hidden = 14336, .ffn_act = FFN_SWIGLU,
     .experts = 8, .shared_experts = 0, .expert_hidden = 14336, .top_k = 2, .vocab = 32000,
     .seq_len = 4096, .attention = ATTN_GQA, .tie_embeddings = 0, .published_active_params = 12.9e9},
    {.preset = "gpt3-175b", .layers = 96, .dense_layers = 96, .hidden = 12288, .heads = 96,
     .head_dim = 128, .kv_heads = 96, .v_head_dim = 128, .ffn_hidden = 49152, .ffn_act = FFN_GELU,
     .experts = 0, .vocab = 50257, .seq_len = 2048, .attention = ATTN_MHA, .tie_embeddings = 1,
     .published_active_params = 175e9},
    {.preset = "llama3-405b", .layers = 126, .dense_layers = 126, .hidden = 16384, .heads = 128,
     .head_dim = 128, .kv_heads = 8, .v_head_dim = 128, .ffn_hidden = 53248, .ffn_act = FFN_SWIGLU,
     .experts = 0, .vocab = 128256, .seq_len = 8192, .attention = ATTN_GQA, .tie_embeddings = 0,
     .published_active_params = 405e9},
};

/* 512 nodes x 8 GPUs, one 400 Gb/s NIC per GPU on its rail, 32 nodes under one leaf per rail. */
#define EIGHT_RAIL_FABRIC                                                                          \
    .nodes = 512, .gpus_per_node = 8, .nic_gbps = 400, .rails = 8, .leaf_down_ports = 32,          \
    .oversubscription = 1.0, .latency_us = {.nvlink = 3.3, .same_leaf = 2.8, .cross_leaf = 3.7},   \
    .storage_GBps = 2000, .host_mem_GiB = 2048, .pcie_GBps = 64

static const cluster_cfg CLUSTERS[] = {
    {.preset = "h800-8rail", EIGHT_RAIL_FABRIC, .nvlink_GBps = 160,
     .gpu = {.name = "H800", .bf16_tflops = 989, .fp8_tflops = 1979, .hbm_GBps = 3350, .mem_GiB = 80}},
    {.preset = "h100-8rail", EIGHT_RAIL_FABRIC, .nvlink_GBps = 450,
     .gpu = {.name = "H100", .bf16_tflops = 989, .fp8_tflops = 1979, .hbm_GBps = 3350, .mem_GiB = 80}},
    {.preset = "h200-8rail", EIGHT_RAIL_FABRIC, .nvlink_GBps = 450,
     .gpu = {.name = "H200", .bf16_tflops = 989, .fp8_tflops = 1979, .hbm_GBps = 4800, .mem_GiB = 141}},
};

int preset_model(const char *name, model_cfg *out) {
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
        if (strcmp(MODELS[i].preset, name) == 0) { *out = MODELS[i]; return 0; }
    return -1;
}

int preset_cluster(const char *name, cluster_cfg *out) {
    for (size_t i = 0; i < sizeof CLUSTERS / sizeof CLUSTERS[0]; i++)
        if (strcmp(CLUSTERS[i].preset, name) == 0) { *out = CLUSTERS[i]; return 0; }
    return -1;
}

const char *preset_cluster_calibration(const char *name) {
    static const char *const MODELS[][2] = {
        {"h800-8rail", "calibration/models/h800-published.json"},
        {"h100-8rail", "calibration/models/h100-published.json"},
        {"h200-8rail", "calibration/models/h200-published.json"},
    };
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
        if (strcmp(MODELS[i][0], name) == 0) return MODELS[i][1];
    return NULL;
}
