/* presets.c — built-in models and clusters.
 *
 * Models: the published configurations, each with the figures its total and active parameter counts
 * are checked against (tests/test_model.c, within 1.5%). Field values from the models' config.json
 * (Hugging Face) and the papers below; the research notes behind them list the copies read
 * (derived checkpoints carrying the official _name_or_path, Megatron-Bridge providers, MindSpeed
 * configs). Clusters: public GPU specifications (REFERENCE.md §6) on an 8-rail rail-optimized fabric
 * of 512 nodes x 8 GPUs (seed 003). */
#include "sim/scenario/presets.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

const char *const preset_model_names[] = {"deepseek-v3", "mixtral-8x7b", "gpt3-175b", "llama3-405b",
                                          "llama3-8b", "llama3-70b", "qwen3-30b-a3b", "qwen3-235b-a22b",
                                          "gpt-oss-120b", "kimi-k2", "mixtral-8x22b", NULL};
const char *const preset_cluster_names[] = {"h800-8rail", "h800-mpft", "h100-8rail", "h100-meta-24k", "h200-8rail",
                                            "b200-8rail", "b300-8rail", "gb200-nvl72", "gb300-nvl72", NULL};

/* Llama 3 family ("The Llama 3 Herd of Models", arXiv:2407.21783, Table 3; config.json of
 * meta-llama/Meta-Llama-3-8B, -70B and Llama-3.1-405B): GQA with 8 KV heads of 128, SwiGLU, RMSNorm,
 * no biases, vocabulary 128,256, untied. Published: 8B, 70B, 405B. */
#define LLAMA3(name, L, h, H, f, s)                                                                \
    {.preset = name, .layers = L, .dense_layers = L, .hidden = h, .heads = H, .head_dim = 128,     \
     .kv_heads = 8, .v_head_dim = 128, .ffn_hidden = f, .ffn_act = FFN_SWIGLU, .experts = 0,       \
     .vocab = 128256, .seq_len = s, .attention = ATTN_GQA, .tie_embeddings = 0}

static const model_cfg MODELS[] = {
    /* DeepSeek-V3 technical report (arXiv:2412.19437) and config.json: 671B total, 37B active, both
     * without the multi-token-prediction module (README_WEIGHTS.md: 14B more on disk). The report
     * trains with one MTP module; the preset keeps the published 671B model (mtp_layers 0): set
     * model.mtp_layers to 1 for the training recipe. */
    {.preset = "deepseek-v3", .layers = 61, .dense_layers = 3, .hidden = 7168, .heads = 128,
     .head_dim = 128, .kv_heads = 128, .q_lora_rank = 1536, .kv_lora_rank = 512, .rope_head_dim = 64,
     .v_head_dim = 128, .ffn_hidden = 18432, .ffn_act = FFN_SWIGLU, .experts = 256, .shared_experts = 1,
     .expert_hidden = 2048, .top_k = 8, .expert_groups = 8, .topk_groups = 4, .vocab = 129280,
     .seq_len = 4096, .attention = ATTN_MLA, .tie_embeddings = 0, .published_active_params = 37e9},
    /* Mistral AI, "Mixtral of experts" (arXiv:2401.04088): 46.7B total, 12.9B active */
    {.preset = "mixtral-8x7b", .layers = 32, .dense_layers = 0, .hidden = 4096, .heads = 32,
     .head_dim = 128, .kv_heads = 8, .v_head_dim = 128, .ffn_hidden = 14336, .ffn_act = FFN_SWIGLU,
     .experts = 8, .shared_experts = 0, .expert_hidden = 14336, .top_k = 2, .vocab = 32000,
     .seq_len = 4096, .attention = ATTN_GQA, .tie_embeddings = 0, .published_active_params = 12.9e9},
    /* Brown et al. 2020 (arXiv:2005.14165), Table 2.1: 175B */
    {.preset = "gpt3-175b", .layers = 96, .dense_layers = 96, .hidden = 12288, .heads = 96,
     .head_dim = 128, .kv_heads = 96, .v_head_dim = 128, .ffn_hidden = 49152, .ffn_act = FFN_GELU,
     .experts = 0, .vocab = 50257, .seq_len = 2048, .attention = ATTN_MHA, .tie_embeddings = 1,
     .published_active_params = 175e9},
    {.preset = "llama3-405b", .layers = 126, .dense_layers = 126, .hidden = 16384, .heads = 128,
     .head_dim = 128, .kv_heads = 8, .v_head_dim = 128, .ffn_hidden = 53248, .ffn_act = FFN_SWIGLU,
     .experts = 0, .vocab = 128256, .seq_len = 8192, .attention = ATTN_GQA, .tie_embeddings = 0,
     .published_active_params = 405e9},
    LLAMA3("llama3-8b", 32, 4096, 32, 14336, 8192),
    LLAMA3("llama3-70b", 80, 8192, 64, 28672, 8192),
    /* Qwen3 MoE (Qwen/Qwen3-30B-A3B and Qwen3-235B-A22B config.json and model cards): every block MoE
     * (no dense FFN, no shared expert), 128 experts top-8, GQA with 4 KV heads of 128 (per-head QK
     * RMSNorm, 256 parameters a layer, not counted), vocabulary 151,936, untied. Published: 30.5B /
     * 3.3B active and 235B / 22B active. */
    {.preset = "qwen3-30b-a3b", .layers = 48, .dense_layers = 0, .hidden = 2048, .heads = 32,
     .head_dim = 128, .kv_heads = 4, .v_head_dim = 128, .ffn_hidden = 6144, .ffn_act = FFN_SWIGLU,
     .experts = 128, .shared_experts = 0, .expert_hidden = 768, .top_k = 8, .vocab = 151936,
     .seq_len = 4096, .attention = ATTN_GQA, .tie_embeddings = 0, .published_active_params = 3.3e9},
    {.preset = "qwen3-235b-a22b", .layers = 94, .dense_layers = 0, .hidden = 4096, .heads = 64,
     .head_dim = 128, .kv_heads = 4, .v_head_dim = 128, .ffn_hidden = 12288, .ffn_act = FFN_SWIGLU,
     .experts = 128, .shared_experts = 0, .expert_hidden = 1536, .top_k = 8, .vocab = 151936,
     .seq_len = 4096, .attention = ATTN_GQA, .tie_embeddings = 0, .published_active_params = 22e9},
    /* gpt-oss-120b (OpenAI model card, arXiv:2508.10925; openai/gpt-oss-120b config.json): 36 MoE
     * blocks of 128 experts top-4 with expert width 2880 (SwiGLU), GQA 64 heads / 8 KV heads of 64,
     * a 128-token sliding window on every other block (even blocks windowed, odd blocks full),
     * vocabulary 201,088, untied. Attention and expert biases and the per-head attention sinks (0.04%
     * of the parameters) are not counted (model.h). Published: 116.83B total, 5.13B active (the
     * card's active count leaves out the embedding table). */
    {.preset = "gpt-oss-120b", .layers = 36, .dense_layers = 0, .hidden = 2880, .heads = 64,
     .head_dim = 64, .kv_heads = 8, .v_head_dim = 64, .ffn_hidden = 2880, .ffn_act = FFN_SWIGLU,
     .experts = 128, .shared_experts = 0, .expert_hidden = 2880, .top_k = 4, .vocab = 201088,
     .seq_len = 4096, .attention = ATTN_GQA, .tie_embeddings = 0, .published_active_params = 5.13e9,
     .sliding_window = 128, .global_attention_every = 2},
    /* Kimi K2 (MoonshotAI/Kimi-K2 README "Model Summary"; config as in DeepSeek-V3's architecture):
     * 61 blocks of which the first is dense, MLA with 64 heads, 384 routed experts top-8 plus one
     * shared, no group-limited routing, vocabulary 163,840, untied. Published: 1T / 32B (README),
     * 1.04T / 32.6B (technical report, arXiv:2507.20534). */
    {.preset = "kimi-k2", .layers = 61, .dense_layers = 1, .hidden = 7168, .heads = 64,
     .head_dim = 128, .kv_heads = 64, .q_lora_rank = 1536, .kv_lora_rank = 512, .rope_head_dim = 64,
     .v_head_dim = 128, .ffn_hidden = 18432, .ffn_act = FFN_SWIGLU, .experts = 384, .shared_experts = 1,
     .expert_hidden = 2048, .top_k = 8, .expert_groups = 0, .topk_groups = 0, .vocab = 163840,
     .seq_len = 4096, .attention = ATTN_MLA, .tie_embeddings = 0, .published_active_params = 32e9},
    /* Mixtral 8x22B (mistralai/Mixtral-8x22B-Instruct-v0.1 config.json; Mistral AI, "Cheaper, Better,
     * Faster, Stronger", 2024: 141B total, 39B active): 56 blocks, 8 experts top-2 of width 16,384,
     * GQA 48 heads / 8 KV heads, vocabulary 32,768, untied. */
    {.preset = "mixtral-8x22b", .layers = 56, .dense_layers = 0, .hidden = 6144, .heads = 48,
     .head_dim = 128, .kv_heads = 8, .v_head_dim = 128, .ffn_hidden = 16384, .ffn_act = FFN_SWIGLU,
     .experts = 8, .shared_experts = 0, .expert_hidden = 16384, .top_k = 2, .vocab = 32768,
     .seq_len = 4096, .attention = ATTN_GQA, .tie_embeddings = 0, .published_active_params = 39e9},
};

/* Queue pairs NCCL opens per connection between two ranks: NCCL_IB_QPS_PER_CONNECTION, default 1
 * (NVIDIA NCCL user guide, "Environment Variables", NCCL_IB_QPS_PER_CONNECTION; NVIDIA/nccl
 * src/transport/net_ib.cc: NCCL_PARAM(IbQpsPerConn, "IB_QPS_PER_CONNECTION", 1)). */
#define NCCL_QPS_PER_CONNECTION 1
/* NCCL's queue-pair retry defaults: NCCL_IB_TIMEOUT 20 (an ACK timeout of 4.096 us x 2^20 = 4.29 s)
 * and NCCL_IB_RETRY_CNT 7 (NVIDIA/nccl src/transport/net_ib.cc: NCCL_PARAM(IbTimeout, "IB_TIMEOUT",
 * 20), NCCL_PARAM(IbRetryCnt, "IB_RETRY_CNT", 7); NCCL user guide, Environment Variables). They apply
 * to RoCE queue pairs as well: NCCL drives both through its IB verbs transport. */
#define NCCL_QP_RETRY .nccl_ib_timeout = 20, .nccl_ib_retry_cnt = 7

/* 512 nodes x 8 GPUs, one NIC of `nic` Gb/s per GPU on its rail, 32 nodes under one leaf per rail.
 * Storage: Llama 3's file system (Dubey et al. 2024, "The Llama 3 Herd of Models", section 3.3.1:
 * Tectonic, 240 PB on 7,500 SSD servers) sustains 2 TB/s (7 TB/s peak) for a 16,384-GPU job, i.e.
 * 122 MB/s per GPU: 500 GB/s for these 4096 GPUs. Host memory: a DGX H100 has 2 TB; PCIe 5.0 x16
 * moves about 64 GB/s per direction. */
#define EIGHT_RAIL_FABRIC_OF(nic, n_nodes, storage)                                                     \
    .nodes = (n_nodes), .gpus_per_node = 8, .nic_gbps = (nic), .rails = 8, .leaf_down_ports = 32,       \
    .oversubscription = 1.0, .pod_oversubscription = 1.0,                                               \
    .latency_us = {.nvlink = 3.3, .same_leaf = 2.8, .cross_leaf = 3.7, .cross_pod = 4.6},               \
    .storage_GBps = (storage), .host_mem_GiB = 2048, .pcie_GBps = 64, .qps_per_connection = NCCL_QPS_PER_CONNECTION, NCCL_QP_RETRY
#define EIGHT_RAIL_FABRIC(nic) EIGHT_RAIL_FABRIC_OF(nic, 512, 500)
/* An InfiniBand fabric (cluster.transport): lossless by credits, a stalled end node's queue discarded
 * after the subnet manager's leaf head-of-queue lifetime (what the scenario field's followers set) */
#define INFINIBAND .transport = TRANSPORT_IB, .pfc = 1, .stall_discard_ms = IB_LEAF_HOQ_LIFETIME_MS

/* mem_GiB is the HBM the driver exposes (NVML memory.total, printed by nvidia-smi in MiB) / 1024. The
 * datasheets' "GB" capacities are binary figures rounded, not decimal gigabytes: the driver shows
 * 0.4-0.6% less than 80, 141, 180 or 186 GiB and 3.6% less than GB300's 288. H800/H100 keep the 80 GiB
 * of their five 16 GiB HBM3 stacks (the driver shows 81,559 MiB = 79.65 GiB, Modal's table cited at
 * h200-8rail). */
/* The GPUs' persistent compute-speed spread (cluster.gpu.speed_cv, sim/program/faults.h): the
 * coefficient of variation of each worker's mean forward and backward compute time among the healthy
 * workers of one pipeline stage doing identical work in ByteDance's production LLM training traces
 * (ByteDance-Seed/StragglerAnalysis at 8efcd7f, the artifact of Lin et al., OSDI'25, arXiv 2505.05713:
 * data/trace-AR.parquet forward 0.30%, backward 0.37%; trace-ST.parquet 0.33%, 0.28%; their mean,
 * 0.32%, derived with pandas in the research note kernels-scale.md section 4.1). It is the one
 * published figure that measures this quantity on LLM training; the larger spreads elsewhere are other
 * quantities (Sinha et al., SC'22: 8% max-to-min on V100 and MI60 clusters; ml-engineering: "5% and
 * higher" matmul-benchmark spread in one node; Llama 3: a 1-2% diurnal swing of the whole job). */
#define FLEET_SPEED_CV .speed_cv = 0.0032
/* The GPU fields the joint calibration fits, left "auto" (sim/plan/global_params.h): the committed fit's
 * value for the GPU's scope, else the cost model's own. */
#define GPU_FITTED_AUTO .sustained = -1, .grouped_gemm_rate = -1

static const cluster_cfg CLUSTERS[] = {
    /* NVLink line rates per direction: H800 400 GB/s bidirectional (DeepSeek-V3 report section 3.1),
     * H100/H200 900 GB/s (18 NVLink 4 links); the cost models give the achieved fraction. H200's 141 GB
     * is 143,771 MiB = 140.40 GiB as the driver reports it (Modal's table of NVML capacities,
     * thundergolfer.com/blog/nvidia-gpu-memory-capacity: "H200 141 GB 143,771 MiB 140.40 GiB"). */
    {.preset = "h800-8rail", EIGHT_RAIL_FABRIC(400), .nvlink_GBps = 200,
     .gpu = {.name = "H800", GPU_FITTED_AUTO, .bf16_tflops = 989, .fp8_tflops = 1979, .hbm_GBps = 3350, .mem_GiB = 80, FLEET_SPEED_CV}},
    /* DeepSeek's multi-plane fat tree (MPFT): 8 planes, one per GPU-NIC pair (ConnectX-7, 400 Gb/s
     * InfiniBand), each a two-layer fat tree of 64-port switches, 16,384 GPUs in all with 768 switches
     * (Zhao et al., "Insights into DeepSeek-V3: Scaling Challenges and Reflections on Hardware for AI
     * Architectures", ISCA 2025, arXiv:2505.09343, section on the multi-plane network). Each plane is
     * one of moesim's rails: 64 leaves of 32 down and 32 up ports and 32 spines per plane, non-blocking,
     * 2,048 nodes; planes meet only inside a node (cross-plane traffic forwarded over NVLink, moesim's
     * PXN). Storage: Llama 3's 2 TB/s for 16,384 GPUs (as above). */
    {.preset = "h800-mpft", EIGHT_RAIL_FABRIC_OF(400, 2048, 2000), .nvlink_GBps = 200, INFINIBAND,
     .gpu = {.name = "H800", GPU_FITTED_AUTO, .bf16_tflops = 989, .fp8_tflops = 1979, .hbm_GBps = 3350, .mem_GiB = 80, FLEET_SPEED_CV}},
    {.preset = "h100-8rail", EIGHT_RAIL_FABRIC(400), .nvlink_GBps = 450,
     .gpu = {.name = "H100", GPU_FITTED_AUTO, .bf16_tflops = 989, .fp8_tflops = 1979, .hbm_GBps = 3350, .mem_GiB = 80, FLEET_SPEED_CV}},
    /* Meta's 24K-GPU RoCE cluster that trained Llama 3 405B (Dubey et al., "The Llama 3 Herd of Models",
     * arXiv:2407.21783, section 3.3.1): 24,576 H100s (700 W, 80 GB HBM3) in Grand Teton servers of 8
     * GPUs, 400 Gb/s RoCE between GPUs, a three-layer Clos: racks of 16 GPUs (two servers) under one
     * ToR switch, 192 racks (384 servers, 3,072 GPUs) per pod with full bisection bandwidth, 8 pods under
     * the aggregation layer at an oversubscription of 1:7; PFC without DCQCN (Gangidi et al., "RDMA over
     * Ethernet for Distributed AI Training at Meta Scale", SIGCOMM 2024); Tectonic storage at 2 TB/s
     * sustained. In moesim's rail fabric a rack's ToR is a leaf of 2 nodes on each rail (the same bytes
     * per port for same-rail traffic; a rack's cross-rail traffic goes through PXN instead of the ToR),
     * a pod 384 nodes, the core 7:1. Path selection stays "adaptive" (Meta's enhanced ECMP with more
     * queue pairs per connection is not a mode here: set "ecmp" and qps_per_connection to bracket it).
     * Host memory and PCIe as the DGX H100 (assumed: Grand Teton's are not in the sources). */
    {.preset = "h100-meta-24k", .nodes = 3072, .gpus_per_node = 8, .nic_gbps = 400, .rails = 8, .leaf_down_ports = 2,
     .oversubscription = 1.0, .pod_nodes = 384, .pod_oversubscription = 7, .pfc = 1,
     .latency_us = {.nvlink = 3.3, .same_leaf = 2.8, .cross_leaf = 3.7, .cross_pod = 4.6}, .storage_GBps = 2000,
     .host_mem_GiB = 2048, .pcie_GBps = 64, .qps_per_connection = NCCL_QPS_PER_CONNECTION, NCCL_QP_RETRY, .nvlink_GBps = 450,
     .gpu = {.name = "H100", GPU_FITTED_AUTO, .bf16_tflops = 989, .fp8_tflops = 1979, .hbm_GBps = 3350, .mem_GiB = 80, FLEET_SPEED_CV}},
    {.preset = "h200-8rail", EIGHT_RAIL_FABRIC(400), .nvlink_GBps = 450,
     .gpu = {.name = "H200", GPU_FITTED_AUTO, .bf16_tflops = 989, .fp8_tflops = 1979, .hbm_GBps = 4800,
             .mem_GiB = 143771 / 1024.0, FLEET_SPEED_CV}},
    /* HGX / DGX B200 (1000 W): dense BF16 2.25 PF, FP8 4.5 PF, FP4 9 PF per GPU (NVIDIA Blackwell
     * technical brief, as tabulated at glennklockwood.com/garden/processors/B200; the DGX B200
     * datasheet's 72 PF FP8 and 144 PF FP4 are sparse figures for 8 GPUs); HBM3e 8 TB/s and 180 GB per
     * GPU (DGX B200 user guide: 1,440 GB for 8 GPUs), 183,359 MiB = 179.06 GiB as nvidia-smi reports it
     * (Vultr's "NVIDIA HGX B200 Hardware Overview", memory.total 179 GB,
     * docs.vultr.com/inference-cookbook/cuda/getting-started/hardware-overview); NVLink 5, 1.8 TB/s
     * bidirectional = 900 GB/s per direction, 8 GPUs per NVSwitch domain; 8 x ConnectX-7 400 Gb/s (DGX
     * B200 user guide: "8 x NVIDIA ConnectX-7 Single Port Cards, InfiniBand up to 400Gbps"); 2 TB system
     * memory, PCIe 5.0 x16. */
    {.preset = "b200-8rail", EIGHT_RAIL_FABRIC(400), .nvlink_GBps = 900,
     .gpu = {.name = "B200", GPU_FITTED_AUTO, .bf16_tflops = 2250, .fp8_tflops = 4500, .hbm_GBps = 8000,
             .mem_GiB = 183359 / 1024.0, .fp4_tflops = 9000, FLEET_SPEED_CV}},
    /* HGX / DGX B300 (Blackwell Ultra B300 SXM6, 1100 W), 8 GPUs per node (aiwiki.ai/wiki/nvidia_dgx_b300:
     * "eight B300 SXM GPUs", 2 x Xeon 6776P; Megatron-Bridge v0.4.2 scripts/performance/argument_parser.py
     * NUM_GPUS_PER_NODE_MAP["b300"] = 8). Per GPU, from NVIDIA's ai-dynamo/aiconfigurator
     * aic-core/src/aiconfigurator_core/systems/b300_sxm.yaml at 095f58a5 (after NVIDIA's Blackwell Ultra
     * datasheet): dense BF16 2,250 TFLOP/s (4.5 PF sparse / 2), FP8 4,500 (9 PF sparse / 2; the DGX B300's
     * 72 PF FP8 per 8 GPUs is the same figure sparse), FP4 14,000 dense (18 PF sparse) -- FP4 of medium
     * confidence: glennklockwood.com/garden/processors/B300 tabulates 13,125 for the HGX B300; 288 GB
     * HBM3e (2.3 TB per DGX) of which the driver exposes 275,040 MiB =
     * 268.59 GiB ("275040MiB reported by nvidia-smi", the same file); HBM up to 8 TB/s per GPU, 64 TB/s
     * per node (acecloud.ai/blog/nvidia-hgx-b300; aiconfigurator takes 7.75 TB/s, 62 TB/s per node);
     * NVLink 5, 1.8 TB/s bidirectional = 900 GB/s per direction, one 8-GPU NVSwitch domain, and 8 x
     * ConnectX-8 SuperNIC, one 800 Gb/s NIC per GPU (acecloud.ai/blog/nvidia-hgx-b300; aiconfigurator:
     * intra-node 900 GB/s, "1:1 CX8 XDR 800Gb/s"). GPU to host at PCIe 5.0 x16 (the GPU has Gen6; the Xeon
     * 6 host has PCIe 5.0: inferred); host memory and storage as the other 8-GPU presets. */
    {.preset = "b300-8rail", EIGHT_RAIL_FABRIC(800), .nvlink_GBps = 900,
     .gpu = {.name = "B300", GPU_FITTED_AUTO, .bf16_tflops = 2250, .fp8_tflops = 4500, .hbm_GBps = 8000,
             .mem_GiB = 275040 / 1024.0, .fp4_tflops = 14000, FLEET_SPEED_CV}},
    /* GB200 NVL72: 72 B200 (1200 W: dense BF16 2.5 PF, FP8 5 PF, FP4 10 PF; the NVL72 page's 720 PF FP8
     * and 1.44 EF FP4 per rack are sparse: / 72 / 2) in one NVLink domain of 130 TB/s (1.8 TB/s per
     * GPU), 186 GB HBM3e per GPU (13.4 TB per rack) = 189,471 MiB = 185.03 GiB as the driver exposes it
     * (NVIDIA's MLPerf Training v5.1 system description: mlcommons/training_results_v5.1
     * NVIDIA/systems/tyche_ngpu8_ngc25.04_pytorch.json at 4da2d1cd, "189471 MiB"; the same figure in
     * ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/systems/gb200.yaml at 095f58a5), 8 TB/s;
     * 18 compute trays of 2 Grace + 4 GPUs, one 400 Gb/s ConnectX-7 per GPU on the tray's 4 rails; per
     * tray 2 x 480 GB LPDDR5X; GPU to host over NVLink-C2C, 900 GB/s bidirectional per Grace shared by 2
     * GPUs: 225 GB/s per GPU per direction (NVIDIA GB200 NVL72 product page and datasheet). 56 racks =
     * 4032 GPUs. */
    {.preset = "gb200-nvl72", .nodes = 1008, .gpus_per_node = 4, .nvlink_domain_gpus = 72, .nic_gbps = 400,
     .rails = 4, .leaf_down_ports = 32, .oversubscription = 1.0, .pod_oversubscription = 1.0,
     .latency_us = {.nvlink = 3.3, .same_leaf = 2.8, .cross_leaf = 3.7, .cross_pod = 4.6}, .storage_GBps = 500,
     .host_mem_GiB = 960, .pcie_GBps = 225, .nvlink_GBps = 900, .qps_per_connection = NCCL_QPS_PER_CONNECTION, NCCL_QP_RETRY,
     .gpu = {.name = "GB200", GPU_FITTED_AUTO, .bf16_tflops = 2500, .fp8_tflops = 5000, .hbm_GBps = 8000,
             .mem_GiB = 189471 / 1024.0, .fp4_tflops = 10000, FLEET_SPEED_CV}},
    /* GB300 NVL72: 72 Blackwell Ultra B300 (1400 W: dense BF16 2.5 PF, FP8 5 PF, FP4 15 PF: 1.1 EF
     * dense FP4 and 360 PF dense FP8 per rack, NVIDIA GTC 2025, as tabulated at
     * glennklockwood.com/garden/processors/B300), 288 GB HBM3e per GPU (12-high stacks)
     * of which the driver exposes 284,208 MiB = 277.55 GiB (NVIDIA's MLPerf Training v5.1 system
     * description: mlcommons/training_results_v5.1 NVIDIA/systems/theia_ngpu8_ngc25.09_nemo.json at
     * 4da2d1cd, "284208 MiB"; aiconfigurator's gb300.yaml at 095f58a5, the same), 8 TB/s, the same
     * 130 TB/s NVLink domain; one ConnectX-8 SuperNIC at 800 Gb/s per GPU (NVIDIA NVL72 AI factory
     * reference architecture: 4 per compute tray); Grace host memory and NVLink-C2C as GB200. */
    {.preset = "gb300-nvl72", .nodes = 1008, .gpus_per_node = 4, .nvlink_domain_gpus = 72, .nic_gbps = 800,
     .rails = 4, .leaf_down_ports = 32, .oversubscription = 1.0, .pod_oversubscription = 1.0,
     .latency_us = {.nvlink = 3.3, .same_leaf = 2.8, .cross_leaf = 3.7, .cross_pod = 4.6}, .storage_GBps = 500,
     .host_mem_GiB = 960, .pcie_GBps = 225, .nvlink_GBps = 900, .qps_per_connection = NCCL_QPS_PER_CONNECTION, NCCL_QP_RETRY,
     .gpu = {.name = "GB300", GPU_FITTED_AUTO, .bf16_tflops = 2500, .fp8_tflops = 5000, .hbm_GBps = 8000,
             .mem_GiB = 284208 / 1024.0, .fp4_tflops = 15000, FLEET_SPEED_CV}},
};

int preset_model(const char *name, model_cfg *out) {
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
        if (strcmp(MODELS[i].preset, name) == 0) { *out = MODELS[i]; return 0; }
    return -1;
}

/* The published training runs. Every model here routes each token to its top-k experts among all of
 * them (free routing) unless its row says otherwise, and none publishes a capacity factor or token
 * dropping but DeepSeek-V3, which states it drops none: all are dropless. */
static const struct {
    const char *name;
    model_recipe r;
} RECIPES[] = {
    /* DeepSeek-V3 report (arXiv:2412.19437): section 2.1.2 "each token will be sent to at most M = 4
     * nodes" and "DeepSeek-V3 does not drop any tokens during training"; section 3.3: blockwise FP8
     * GEMMs, FP8 dispatch, BF16 combine, FP32 master weights; abstract: pre-trained on 14.8 trillion
     * tokens. */
    {"deepseek-v3", {.compute = DT_FP8, .combine = DT_BF16, .master = DT_FP32, .node_limit = 4,
                     .training_tokens = 14.8e12}},
    /* "Mixtral of experts" (arXiv:2401.04088) section 2.1: every token to its top-2 of 8 experts; BF16.
     * No token count published. */
    {"mixtral-8x7b", {.compute = DT_BF16, .combine = DT_BF16, .master = DT_FP32}},
    {"mixtral-8x22b", {.compute = DT_BF16, .combine = DT_BF16, .master = DT_FP32}},
    /* GPT-3 (arXiv:2005.14165) section 2.2: "all models were trained for a total of 300 billion tokens" */
    {"gpt3-175b", {.compute = DT_BF16, .combine = DT_BF16, .master = DT_FP32, .training_tokens = 300e9}},
    /* Llama 3 (arXiv:2407.21783; the meta-llama model cards): pre-trained on "over 15T tokens" */
    {"llama3-405b", {.compute = DT_BF16, .combine = DT_BF16, .master = DT_FP32, .training_tokens = 15e12}},
    {"llama3-8b", {.compute = DT_BF16, .combine = DT_BF16, .master = DT_FP32, .training_tokens = 15e12}},
    {"llama3-70b", {.compute = DT_BF16, .combine = DT_BF16, .master = DT_FP32, .training_tokens = 15e12}},
    /* Qwen3 technical report (arXiv:2505.09388) section 3: pre-trained on 36 trillion tokens; section 2:
     * 128 experts, 8 activated per token, global-batch load balancing, no node or group limit */
    {"qwen3-30b-a3b", {.compute = DT_BF16, .combine = DT_BF16, .master = DT_FP32, .training_tokens = 36e12}},
    {"qwen3-235b-a22b", {.compute = DT_BF16, .combine = DT_BF16, .master = DT_FP32, .training_tokens = 36e12}},
    /* gpt-oss model card (arXiv:2508.10925): "trillions of tokens", no count; no node limit */
    {"gpt-oss-120b", {.compute = DT_BF16, .combine = DT_BF16, .master = DT_FP32}},
    /* Kimi K2 technical report (arXiv:2507.20534): pre-trained on 15.5 trillion tokens; 384 experts,
     * no expert grouping (the preset's expert_groups 0), no node limit */
    {"kimi-k2", {.compute = DT_BF16, .combine = DT_BF16, .master = DT_FP32, .training_tokens = 15.5e12}},
    /* a model given field by field: nothing published, neutral choices */
    {"", {.compute = DT_BF16, .combine = DT_BF16, .master = DT_FP32}},
};

int preset_model_recipe(const char *name, model_recipe *out) {
    for (size_t i = 0; i < sizeof RECIPES / sizeof RECIPES[0]; i++)
        if (strcmp(RECIPES[i].name, name) == 0) { *out = RECIPES[i].r; return 0; }
    return -1;
}

/* DeepSeek's blockwise FP8 recipe sends FP8 tokens (DeepSeek-V3 report section 3.3). Megatron-Core's
 * FP8 and FP4 recipes (fp8-cs, mxfp8, nvfp4 here) quantize inside the expert GEMMs under Transformer
 * Engine's autocast, which covers the GEMMs and not the all-to-all: the token dispatchers
 * (megatron/core/transformer/moe/token_dispatcher.py) send the hidden states in the dtype they are
 * given, BF16, unless an FP8 dispatch is configured (set precision.dispatch then). BF16, FP16 and
 * FP32 runs dispatch BF16. */
dtype_kind preset_dispatch_for(dtype_kind compute) { return compute == DT_FP8 ? DT_FP8 : DT_BF16; }

void preset_model_list(char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; preset_model_names[i] && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", preset_model_names[i]);
}

/* A model without a preset (a model section without "preset", or "preset": null): nothing inherited. The fields a scenario may leave out have neutral
 * values (SwiGLU, no group-limited routing, untied, no published count, no MTP, no window);
 * kv_heads and v_head_dim follow heads and head_dim unless given (preset_custom_model_check). */
void preset_custom_model(model_cfg *m) {
    memset(m, 0, sizeof *m);
    m->ffn_act = FFN_SWIGLU;
}

int preset_custom_model_check(model_cfg *m, const cJSON *section, const char *file, moe_error *err) {
    const char *need[24];
    int n = 0;
    static const char *const always[] = {"layers", "hidden", "heads", "head_dim", "vocab", "seq_len",
                                         "attention", "experts"};
    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++) need[n++] = always[i];
    int moe = m->experts > 0;
    if (moe) { need[n++] = "top_k"; need[n++] = "expert_hidden"; need[n++] = "shared_experts";
               need[n++] = "dense_layers"; }
    if (!moe || m->dense_layers > 0) need[n++] = "ffn_hidden";
    if (m->attention == ATTN_GQA) need[n++] = "kv_heads";
    if (m->attention == ATTN_MLA) { need[n++] = "q_lora_rank"; need[n++] = "kv_lora_rank";
                                    need[n++] = "rope_head_dim"; }
    char missing[400] = "";
    size_t len = 0;
    int n_missing = 0;
    for (int i = 0; i < n; i++) {
        if (cJSON_GetObjectItemCaseSensitive(section, need[i])) continue;
        len += (size_t)snprintf(missing + len, len < sizeof missing ? sizeof missing - len : 0, "%s\"%s\"",
                                n_missing ? ", " : "", need[i]);
        n_missing++;
    }
    if (n_missing) {
        char val[460];
        snprintf(val, sizeof val, "a model without a preset missing %s", missing);
        char presets[256];
        preset_model_list(presets, sizeof presets);
        return moe_error_input(err, file, "model", val,
                               "every field a model without a preset states (or \"preset\": a built-in model to "
                               "start from: %s)", presets);
    }
    if (!moe) m->dense_layers = m->layers;          /* a dense model: every block is dense */
    if (!cJSON_GetObjectItemCaseSensitive(section, "kv_heads")) m->kv_heads = m->heads;
    if (!cJSON_GetObjectItemCaseSensitive(section, "v_head_dim")) m->v_head_dim = m->head_dim;
    return 0;
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
        {"h100-meta-24k", "calibration/models/h100-published.json"},
        {"h200-8rail", "calibration/models/h200-published.json"},
        /* Blackwell: fitted on each kind's published measurements (calibration/README.md): GEMMs
         * (XLA's sm_100 table, MAMF, cuBLAS FP4 on B200; MAMF and Azure's cuBLASLt on GB200; MAMF's B300
         * rows for B300 and GB300, on B200's tile/wave structure), cuDNN attention (GB200's for B200,
         * GB300's for B300 and GB300), quantize kernels (TE on B200, on B300 for B300 and GB300), NVLink 5
         * at HybridEP's achieved rate, over the preset's datasheet figures (b200-spec.json,
         * b300-spec.json, gb200-spec.json, gb300-spec.json). Never an Hopper model's efficiencies and
         * link rates. */
        {"b200-8rail", "calibration/models/b200-published.json"},
        {"b300-8rail", "calibration/models/b300-published.json"},
        {"gb200-nvl72", "calibration/models/gb200-published.json"},
        {"gb300-nvl72", "calibration/models/gb300-published.json"},
    };
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
        if (strcmp(MODELS[i][0], name) == 0) return MODELS[i][1];
    return NULL;
}
