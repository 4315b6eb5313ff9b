/* scenario_fields.c — the table of scenario fields and the generic code that reads, writes and
 * checks a field through its row. See scenario_fields.h for the contract. */
#include "sim/scenario/scenario_fields.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/json_read.h"

#include "sim/scenario/presets.h"

/* Enums are stored as int-sized values and read/written as int. */
_Static_assert(sizeof(attention_kind) == sizeof(int), "enums are read as int");
_Static_assert(sizeof(dtype_kind) == sizeof(int), "enums are read as int");

/* ---- enum names (index = enum value) ------------------------------------------------------------- */
const char *const scn_attention_names[] = {"mha", "gqa", "mla", NULL};
const char *const scn_ffn_act_names[] = {"swiglu", "gelu", NULL};
const char *const scn_schedule_names[] = {"1f1b", "interleaved", "dualpipe", NULL};
const char *const scn_recompute_names[] = {"none", "selective", "full", NULL};
/* Megatron-LM's --recompute-modules, bit i = RCM_* (scenario_types.h) */
const char *const scn_recompute_module_names[] = {"core_attn", "mla_up_proj", "layernorm", "mlp", "moe_act", "moe",
                                                  "shared_experts", NULL};
const char *const scn_placement_names[] = {"ep-inner", "dp-inner", NULL};
const char *const scn_cp_comm_names[] = {"p2p", "all_gather", NULL};
const char *const scn_route_names[] = {"uniform", "zipf", "hot", "trace", "balanced", NULL};
const char *const scn_dispatcher_names[] = {"deepep", "alltoall", "hybridep", NULL};
const char *const scn_host_framework_names[] = {"megatron-core", "none", NULL};
const char *const scn_cuda_graph_scope_names[] = {"attn", "mlp", "moe_router", "moe_preprocess", "moe", "layer", NULL};
const char *const scn_group_samples_names[] = {"independent", "shared", NULL};
const char *const scn_nccl_model_names[] = {"tuned", "wire", NULL};
const char *const scn_retx_names[] = {"go-back-n", "selective", NULL};
const char *const scn_path_selection_names[] = {"adaptive", "ecmp", NULL};
const char *const scn_transport_names[] = {"roce", "infiniband", NULL};
const char *const scn_dtype_names[] = {"fp8", "bf16", "fp16", "fp32", NULL};
/* precision.compute: the storage types and the compute recipes (index = dtype_kind) */
const char *const scn_compute_names[] = {"fp8", "bf16", "fp16", "fp32", "fp8-cs", "mxfp8", "nvfp4", "fp8-ds", NULL};
const char *const scn_failure_dist_names[] = {"exponential", "weibull", NULL};
const char *const scn_ckpt_policy_names[] = {"fixed", "young", "daly", "none", NULL};
const char *const scn_ckpt_mode_names[] = {"sync", "async", NULL};
const char *const scn_spike_action_names[] = {"rollback", "skip", "defend", NULL};
const char *const scn_link_kind_names[] = {"nic", "nvlink", "uplink", NULL};
const char *const scn_fidelity_names[] = {"fast", "full", NULL};
const char *const scn_a2a_impl_names[] = {"deepep", "nccl", NULL};
/* bit i of output.levels <-> scn_level_names[i] (LEVEL_PLAN = 1, LEVEL_STEP = 2, LEVEL_RUN = 4) */
const char *const scn_level_names[] = {"plan", "step", "run", NULL};
const char *const scn_failure_class_names[] = {"gpu", "hbm", "nic", "nvlink", "switch", "host",
                                               "software", NULL};
const char *const scn_failure_model_names[] = {"classes", "components", NULL};
const char *const scn_step_sequence_names[] = {"cycle", "mean", NULL};

/* ---- row builders --------------------------------------------------------------------------------- */
/* Each takes the field's documentation last: unit, meaning[, source of the default] (scn_doc). */
#define OFF(m) offsetof(scenario, m)
#define SZ(m) sizeof(((scenario *)0)->m)
#define NOMAX ((double)INT_MAX)
#define DOC(...) .doc = {__VA_ARGS__}
#define F_INT(p, m, lo, hi, ...) {.path = p, .type = SF_INT, .offset = OFF(m), .min = (lo), .max = (hi), DOC(__VA_ARGS__)}
#define F_DBL(p, m, lo, hi, fl, ...) \
    {.path = p, .type = SF_DOUBLE, .offset = OFF(m), .min = (lo), .max = (hi), .flags = (fl), DOC(__VA_ARGS__)}
#define F_POS(p, m, ...) F_DBL(p, m, 0, INFINITY, SCN_MIN_OPEN, __VA_ARGS__)
#define F_NONNEG(p, m, ...) F_DBL(p, m, 0, INFINITY, 0, __VA_ARGS__)
#define F_FRAC(p, m, ...) F_DBL(p, m, 0, 1, 0, __VA_ARGS__)
#define F_BOOL(p, m, ...) {.path = p, .type = SF_BOOL, .offset = OFF(m), DOC(__VA_ARGS__)}
#define F_STR(p, m, fl, ...) {.path = p, .type = SF_STRING, .offset = OFF(m), .size = SZ(m), .flags = (fl), DOC(__VA_ARGS__)}
#define F_NSTR(p, m, ...) {.path = p, .type = SF_NSTRING, .offset = OFF(m), .size = SZ(m), DOC(__VA_ARGS__)}
#define F_ENUM(p, m, nm, ...) {.path = p, .type = SF_ENUM, .offset = OFF(m), .names = nm, DOC(__VA_ARGS__)}
#define F_AUTO(p, m, lo, fl, ...) \
    {.path = p, .type = SF_AUTO, .offset = OFF(m), .min = (lo), .max = INFINITY, .flags = (fl), DOC(__VA_ARGS__)}
#define F_INT_AUTO(p, m, lo, hi, ...) \
    {.path = p, .type = SF_INT_AUTO, .offset = OFF(m), .min = (lo), .max = (hi), DOC(__VA_ARGS__)}
#define F_ENUM_SET(p, m, nm, ...) {.path = p, .type = SF_ENUM_SET, .offset = OFF(m), .names = nm, DOC(__VA_ARGS__)}
#define F_PRESET(p, m, nm, ...) {.path = p, .type = SF_PRESET, .offset = OFF(m), .size = SZ(m), .names = nm, DOC(__VA_ARGS__)}
/* The default class mix: Llama 3 405B pre-training, 419 unexpected interruptions in 54 days on 16,384
 * H100 (failure_classes.c has the grouping). */
#define LLAMA3_MIX "Llama 3 405B pre-training: 419 unexpected interruptions in 54 days on 16,384 H100, by root cause (Dubey et al. 2024, Table 5), grouped into these classes"
#define F_CLASS(c, C, what)                                                                        \
    F_FRAC("reliability.classes." c ".share", reliability.classes[C].share, "fraction",             \
           "share of all failures that are " what " (the shares of all classes sum to 1; they split reliability.gpu_mtbf_h)", \
           LLAMA3_MIX),                                                                            \
    F_BOOL("reliability.classes." c ".needs_node_swap", reliability.classes[C].needs_node_swap, "", \
           "a failure of this class takes the node out of the job (a hot-spare swap, or a wait for repair) instead of restarting in place", \
           "hardware classes swap the node, software restarts in place")

#define COMPONENT_RATES "Llama 3 405B pre-training (Dubey et al. 2024, section 3.3.4, Table 5): per-unit MTBF = units x 1296 h / interruptions of that kind on 16,384 GPUs in 2,048 servers with 1,024 ToR switches (sim/scenario/components.c has the grouping); none for spine layers and racks"
#define F_COMP(c, K, what)                                                                         \
    F_AUTO("reliability.components." c ".count", reliability.components[K].count, 0, 0, "units",   \
           "components model: " what "; auto = the cluster's count; a count given spreads over the cluster's units"), \
    F_NONNEG("reliability.components." c ".mtbf_h", reliability.components[K].mtbf_h, "h",         \
             "mean time between failures of one unit; 0 = never fails", COMPONENT_RATES),           \
    F_POS("reliability.components." c ".weibull_shape", reliability.components[K].weibull_shape, "", \
          "shape k of one unit's lifetime: 1 = exponential; otherwise every unit is its own Weibull renewal process (k < 1: new parts fail early)"), \
    F_NONNEG("reliability.components." c ".detect_s", reliability.components[K].detect_s, "s",      \
             "from a failure to its detection (health check, NCCL timeout): the job hangs meanwhile", "assumption: 0"), \
    F_AUTO("reliability.components." c ".repair_h", reliability.components[K].repair_h, 0, 0, "h",  \
           "repair or RMA of one failed unit, after which its nodes rejoin the spare pool; auto = reliability.recovery.repair_h")

/* Fields of one element of faults.slow_gpus / faults.links (offsets into the element). */
static const scn_field SLOW_GPU_ITEMS[] = {
    {.path = "gpu", .type = SF_INT, .offset = offsetof(slow_gpu_fault, gpu), .min = 0, .max = NOMAX,
     .flags = SCN_REQUIRED, DOC("", "the global GPU id (node x gpus_per_node + local GPU)")},
    /* compute takes `factor` times longer: a slow GPU, never a faster one */
    {.path = "factor", .type = SF_DOUBLE, .offset = offsetof(slow_gpu_fault, factor), .min = 1,
     .max = INFINITY, .flags = SCN_REQUIRED, DOC("x", "every compute op of that GPU takes this many times longer")},
};
static const scn_field LINK_ITEMS[] = {
    /* required for nic and nvlink, refused for uplink: scenario_validate (the item's kind decides) */
    {.path = "gpu", .type = SF_INT, .offset = offsetof(link_fault, gpu), .min = 0, .max = NOMAX,
     .flags = SCN_ABSENT_NEG, DOC("", "kind nic or nvlink: the global GPU id whose link is degraded")},
    {.path = "kind", .type = SF_ENUM, .offset = offsetof(link_fault, kind), .names = scn_link_kind_names,
     .flags = SCN_REQUIRED,
     DOC("", "which link: the GPU's NIC or its NVLink, or a leaf switch's uplink to its rail's spine layer (the "
             "fabric's link up-rR-lL: every spine-facing port of that leaf, platforms/fabric_geometry.h)")},
    /* the link keeps `factor` of its bandwidth: 0 < factor <= 1 (a dead link is a failure, not a fault) */
    {.path = "factor", .type = SF_DOUBLE, .offset = offsetof(link_fault, factor), .min = 0, .max = 1,
     .flags = SCN_REQUIRED | SCN_MIN_OPEN, DOC("fraction", "the share of its bandwidth the link keeps (a dead link is a failure, not a fault)")},
    /* a probability per packet: 1 would deliver nothing (a dead link); left out of the resolved
     * scenario when 0, so that a scenario without losses reads and writes as before */
    {.path = "loss_rate", .type = SF_DOUBLE, .offset = offsetof(link_fault, loss_rate), .min = 0, .max = 1,
     .flags = SCN_MAX_OPEN | SCN_OMIT_ZERO,
     DOC("probability", "NIC and uplink links: the probability that the link loses a packet (CRC errors on a bent fibre); "
                        "the link then runs at factor x the goodput of cluster.retransmission (sim/scenario/link_loss.h); 0 = none")},
    /* after the older keys, so that a nic or nvlink fault is written exactly as before */
    {.path = "rail", .type = SF_INT, .offset = offsetof(link_fault, rail), .min = 0, .max = NOMAX,
     .flags = SCN_ABSENT_NEG, DOC("", "kind uplink (required): the rail of the leaf, 0 .. cluster.rails - 1")},
    {.path = "leaf", .type = SF_INT, .offset = offsetof(link_fault, leaf), .min = 0, .max = NOMAX,
     .flags = SCN_ABSENT_NEG,
     DOC("", "kind uplink (required): the leaf on that rail, 0 .. leaves per rail - 1 (nodes n x cluster.leaf_down_ports "
             "and up sit under leaf n)")},
};

/* faults.stalls: the rank on `gpu` stops before (layer, micro_batch) and never arrives again. */
static const scn_field STALL_ITEMS[] = {
    {.path = "gpu", .type = SF_INT, .offset = offsetof(stall_fault, gpu), .min = 0, .max = NOMAX,
     .flags = SCN_REQUIRED, DOC("", "the global GPU id whose rank stops")},
    {.path = "layer", .type = SF_INT, .offset = offsetof(stall_fault, layer), .min = 0, .max = NOMAX,
     .flags = SCN_REQUIRED, DOC("", "the block before whose forward it stops (0-based)")},
    {.path = "micro_batch", .type = SF_INT, .offset = offsetof(stall_fault, micro_batch), .min = 0,
     .max = NOMAX, .flags = SCN_REQUIRED, DOC("", "the micro-batch (0-based)")},
};

/* Upper bounds on counts keep every product the consumers form (gpus, tp*pp, ...) inside int. */
#define MAX_NODES (1 << 20)
#define MAX_GPUS_PER_NODE 1024
#define MAX_PAR (1 << 20)

/* Sources quoted by several rows. */
#define DSV3_REPORT "DeepSeek-V3 technical report (arXiv:2412.19437)"
#define REF_DESIGN "the 4096-GPU reference design this simulator reproduces (DeepSeek-V3-like MoE on 512 x 8 H800)"

const scn_field scn_fields[] = {
    {.path = "format", .type = SF_FORMAT,
     DOC("", "the format version; optional, and when given it must be \"" SCN_FORMAT "\"")},
    F_STR("name", name, SCN_NONEMPTY | SCN_IDENT, "", "the scenario's name, used in output folders, plot titles and traces"),
    {.path = "seed", .type = SF_U64, .offset = OFF(seed), .min = 0, .max = 9007199254740992.0 /* 2^53 */,
     DOC("", "the random seed of routing draws and Monte Carlo trials: the same scenario and seed give the same results")},

    F_PRESET("model.preset", model.preset, preset_model_names, "",
             "a built-in model: sets every model.* field (which fields given beside it override) and, unless the "
             "scenario sets them, its own routing constraints, precision recipe and training tokens; a model section "
             "without a preset (or null) is a model given field by field: layers, hidden, heads, head_dim, vocab, "
             "seq_len, attention, experts and what these call for, with neutral defaults (BF16, dropless, no node "
             "limit); no model section: deepseek-v3, the built-in default scenario"),
    /* Bounded because a plan and a step program cost time linear in the blocks: 14 million took 1.2 s
     * per plan point (a fuzzer's input), an unbounded count is a hang. */
    F_INT("model.layers", model.layers, 1, 1024, "", "transformer blocks, dense and MoE (not counting embedding and head)",
          "Llama 3 paper (arXiv:2407.21783), Table 3: 126 blocks, the deepest published LLM; the bound is 8x that"),
    F_INT("model.dense_layers", model.dense_layers, 0, NOMAX, "", "the first blocks, which have a dense FFN; the rest are MoE blocks"),
    F_INT("model.hidden", model.hidden, 1, NOMAX, "", "hidden (model) dimension"),
    F_INT("model.heads", model.heads, 1, NOMAX, "", "attention (query) heads"),
    F_INT("model.head_dim", model.head_dim, 1, NOMAX, "", "per-head dimension of queries and keys (MLA: the part without rotary embedding)"),
    F_INT("model.ffn_hidden", model.ffn_hidden, 0, NOMAX, "", "intermediate size of a dense FFN block"),
    F_INT("model.experts", model.experts, 0, NOMAX, "", "routed experts per MoE block; 0 = a dense model"),
    F_INT("model.shared_experts", model.shared_experts, 0, NOMAX, "", "shared experts every token passes through, per MoE block"),
    F_INT("model.expert_hidden", model.expert_hidden, 0, NOMAX, "", "intermediate size of one routed (and shared) expert"),
    F_INT("model.top_k", model.top_k, 0, NOMAX, "", "routed experts per token"),
    F_INT("model.vocab", model.vocab, 1, NOMAX, "tokens", "vocabulary size (embedding and output head)"),
    F_INT("model.seq_len", model.seq_len, 1, NOMAX, "tokens", "sequence length of one training sample"),
    F_ENUM("model.attention", model.attention, scn_attention_names, "", "attention kind: multi-head, grouped-query or multi-head latent (DeepSeek)"),
    F_INT("model.kv_heads", model.kv_heads, 1, NOMAX, "", "key/value heads of grouped-query attention (= heads for MHA; unused by MLA)"),
    F_INT("model.q_lora_rank", model.q_lora_rank, 0, NOMAX, "", "MLA: rank of the low-rank query compression; 0 = none"),
    F_INT("model.kv_lora_rank", model.kv_lora_rank, 0, NOMAX, "", "MLA: rank of the joint key/value compression"),
    F_INT("model.rope_head_dim", model.rope_head_dim, 0, NOMAX, "", "MLA: per-head dimension of the decoupled rotary part of queries and keys"),
    F_INT("model.v_head_dim", model.v_head_dim, 1, NOMAX, "", "per-head dimension of values"),
    F_ENUM("model.ffn_act", model.ffn_act, scn_ffn_act_names, "", "FFN activation: SwiGLU (3 matrices) or GeLU (2 matrices)"),
    F_INT("model.expert_groups", model.expert_groups, 0, NOMAX, "", "group-limited routing: the routed experts form this many groups (0 = off)"),
    F_INT("model.topk_groups", model.topk_groups, 0, NOMAX, "", "group-limited routing: groups a token may choose its experts from (0 = off)"),
    F_BOOL("model.tie_embeddings", model.tie_embeddings, "", "the output head shares the embedding's weights"),
    /* the headline active-parameter count a model card publishes (0 = none): the 6N estimate of the
     * back-of-the-envelope uses it, the exact per-layer counts do not */
    F_NONNEG("model.published_active_params", model.published_active_params, "parameters",
             "the model card's headline active-parameter count, for the 6N FLOPs estimate beside the exact count (0 = none)"),
    F_INT("model.sliding_window", model.sliding_window, 0, NOMAX, "tokens",
          "sliding-window attention: a windowed block's query attends to at most this many preceding keys (0 = full attention everywhere)"),
    F_INT("model.global_attention_every", model.global_attention_every, 0, NOMAX, "",
          "with a sliding window: every k-th block (k-1, 2k-1, ...) keeps full attention (gpt-oss: 2); 0 = every block is windowed"),
    F_INT("model.mtp_layers", model.mtp_layers, 0, 64, "modules",
          "multi-token-prediction modules after the last block (a block of its kind, a 2h x h projection, norms; shared "
          "embedding and head; placed by layout.pipeline_layout's m, else on the last stage); FLOPs and MFU count them, "
          "the published parameter totals do not",
          "0 in every preset (the published totals exclude it); DeepSeek-V3's training recipe uses 1 (" DSV3_REPORT ", section 2.2)"),

    F_PRESET("cluster.preset", cluster.preset, preset_cluster_names, "",
             "a built-in cluster: sets every cluster.* field and the default cost model (calibration); fields given beside it override"),
    F_INT("cluster.nodes", cluster.nodes, 1, MAX_NODES, "", "nodes in the job"),
    F_INT("cluster.gpus_per_node", cluster.gpus_per_node, 1, MAX_GPUS_PER_NODE, "", "GPUs per node (one NVLink domain)"),
    F_STR("cluster.gpu.name", cluster.gpu.name, SCN_NONEMPTY, "", "the GPU model, for reports"),
    F_POS("cluster.gpu.bf16_tflops", cluster.gpu.bf16_tflops, "TFLOP/s",
          "dense BF16 peak per GPU; MFU is model FLOPs over this peak whatever the compute precision", "NVIDIA H100/H800 SXM data sheet"),
    F_POS("cluster.gpu.fp8_tflops", cluster.gpu.fp8_tflops, "TFLOP/s", "dense FP8 peak per GPU", "NVIDIA H100/H800 SXM data sheet"),
    F_POS("cluster.gpu.hbm_GBps", cluster.gpu.hbm_GBps, "GB/s", "HBM bandwidth per GPU (prices memory-bound kernels)", "NVIDIA data sheets"),
    F_POS("cluster.gpu.mem_GiB", cluster.gpu.mem_GiB, "GiB", "HBM capacity per GPU: a point whose most loaded GPU needs more does not fit",
          "NVIDIA data sheets"),
    F_NONNEG("cluster.gpu.fp4_tflops", cluster.gpu.fp4_tflops, "TFLOP/s",
             "dense FP4 peak per GPU (Blackwell block-scaled tensor cores); 0 = no FP4"),
    {.path = "cluster.gpu.sustained", .type = SF_AUTO, .offset = OFF(cluster.gpu.sustained), .min = 0, .max = 1.2,
     .flags = SCN_MIN_OPEN, DOC("fraction",
          "tensor-core rate the GPU sustains over a step against the burst rate of published GEMM and attention "
          "tables (power and clock limits); scales tensor-core-bound time, not HBM-bound time; auto = the joint fit's "
          "value for the GPU kind (calibration/models/global.json: simrun validate --fit; it also absorbs what the step "
          "program does not model on that kind), else the cost model's \"sustained\"",
          "the joint fit (H100 and H800, B200, B300, GB200, GB300); H200 (700 W): 668 / 795 TFLOP/s = 0.84, 60 s of "
          "back-to-back 8192^3 BF16 GEMMs vs cool-GPU bursts (moesim research note kernels-scale.md §4.2); 1 elsewhere")},
    {.path = "cluster.gpu.grouped_gemm_rate", .type = SF_AUTO, .offset = OFF(cluster.gpu.grouped_gemm_rate), .min = 0,
     .max = 2, .flags = SCN_MIN_OPEN, DOC("ratio",
          "rate of the routed experts' grouped GEMMs (TransformerEngine's one cuBLAS launch per local expert) against "
          "the cost model's GEMM tables, which hold dense GEMMs; auto = the joint fit's value for the architecture "
          "(Hopper, Blackwell), else 1; DeepSeek's blockwise FP8 (precision.compute fp8) on Hopper runs DeepGEMM's "
          "grouped kernels, which its GEMM table is fitted to: 1",
          "the joint fit over the MoE rows of each architecture (Hopper: the H100 rows in BF16 and FP8 current "
          "scaling; Blackwell: every B200, B300, GB200 and GB300 MoE row)")},
    F_DBL("cluster.gpu.speed_cv", cluster.gpu.speed_cv, 0, 0.5, 0, "fraction",
          "coefficient of variation of the GPUs' persistent compute speed: each GPU's compute takes a factor drawn once "
          "from the scenario seed, lognormal with median 1 (the cost model prices the median GPU), slower and faster; "
          "the slowest GPU of a synchronous group then sets its pace, and that maximum grows with the GPUs "
          "(E[max of N normals] x cv: x1.012 at 4096 GPUs with the default). Step level; 0 = identical GPUs",
          "0.0032: the spread of per-worker compute time among healthy workers doing identical work in ByteDance's "
          "LLM training traces (ByteDance-Seed/StragglerAnalysis at 8efcd7f, Lin et al. OSDI'25, arXiv 2505.05713: "
          "0.28-0.37%, mean 0.32%), the one published measurement of this quantity in LLM training"),
    F_POS("cluster.nvlink_GBps", cluster.nvlink_GBps, "GB/s",
          "NVLink line rate per GPU per direction; links run at the cost model's achieved fraction of it",
          "H800: 400 GB/s bidirectional = 200 per direction; H100/H200: 900 bidirectional = 450 per direction"),
    F_POS("cluster.nic_gbps", cluster.nic_gbps, "Gbit/s", "line rate of each GPU's NIC (one NIC per GPU, on its rail); "
          "NICs run at the cost model's achieved fraction of it", "ConnectX-7 400 Gb/s"),
    F_ENUM("cluster.nccl_model", cluster.nccl_model, scn_nccl_model_names, "",
           "what NCCL's ring collectives (gradient and parameter syncs, TP all-reduces) pay beyond their bytes: tuned = "
           "NCCL's own tuning model, Simple protocol: 8.4 us + 3.4 us per ring step inside a node + 14 us per step "
           "across nodes (x 1.4 for an all-reduce across nodes), and an all-reduce across nodes as NCCL's tree "
           "(8.4 + 2 ((GPUs per node - 1) x 4 + log2(nodes) x 14) us, 0.92 x the ring's bus bandwidth at half its "
           "algorithm ratio) when that model gives it the lower time; wire = rings only, each step paying its "
           "route's latency (cluster.latency_us). Either way the ring runs one ring per GPU of a node side by side, "
           "NVLink and NICs at once",
           "tuned: NVIDIA/nccl src/graph/tuning.cc at 5067397c (ncclTunerConstantsDefaults, ncclTopoTuneModel, "
           "ncclTopoGetAlgoTime)"),
    F_INT("cluster.rails", cluster.rails, 1, MAX_GPUS_PER_NODE, "", "rails of the rail-optimized fabric (GPU k of every node on rail k): one per GPU of a node",
          "follows cluster.gpus_per_node"),
    F_INT("cluster.leaf_down_ports", cluster.leaf_down_ports, 1, NOMAX, "", "nodes (NICs) under one leaf switch per rail"),
    F_POS("cluster.oversubscription", cluster.oversubscription, "ratio", "leaf downlink to uplink bandwidth ratio (1 = non-blocking)"),
    F_ENUM("cluster.transport", cluster.transport, scn_transport_names, "",
           "the fabric's transport: roce = RoCEv2 over Ethernet, lossy unless cluster.pfc (priority flow control on "
           "one lossless priority), rate-controlled with cluster.ecn (DCQCN); infiniband = credit-based link-level "
           "flow control, always lossless: a receive buffer out of credits stops its sender on that virtual lane for "
           "every packet queued behind, the congestion spreading of PFC on one priority (cluster.pfc follows: true; "
           "false is refused), cluster.ecn its congestion control (FECN/BECN), and a switch port whose head-of-queue "
           "packet waits past its lifetime discards (cluster.stall_discard_ms follows). Both recover lost packets "
           "per cluster.retransmission and route per cluster.path_selection (InfiniBand's adaptive routing, "
           "Spectrum-X's on RoCE)",
           "roce: every preset but h800-mpft, the fabric as moesim priced it before this field; infiniband: "
           "InfiniBand Architecture Specification Vol. 1 (credit-based flow control per virtual lane; switch "
           "head-of-queue lifetime); NCCL puts all its traffic on one service level, one lane (NCCL user guide, "
           "NCCL_IB_SL, default 0); h800-mpft (DeepSeek's InfiniBand planes)"),
    F_BOOL("cluster.pfc", cluster.pfc, "",
           "the fabric is lossless (priority flow control on RoCE; credits on InfiniBand, where it follows "
           "cluster.transport): an incast pauses the switch ports upstream of the hot receiver and every flow queued "
           "behind them waits too (head-of-line blocking); the step reports the paused links and the slowed flows "
           "(sim/exec/pfc_spread.h), and the fast executor adds to each all-to-all the pause the other EP groups of "
           "its stage put on its flows (step.breakdown.pfc_pause_s); --fidelity full has no PFC",
           "off on roce; seed 000 section 0.2 incident 1: PFC back-pressure spread up the switch tree; on (follows) "
           "on infiniband"),
    F_NONNEG("cluster.stall_discard_ms", cluster.stall_discard_ms, "ms",
             "on a lossless fabric (cluster.pfc): a switch port that has not sent for this long discards what its "
             "queue holds and what arrives for it, so a receiver that stops draining holds the ports upstream of it "
             "this long, not forever: the flows queued behind its traffic finish this much late, and its own flows "
             "are lost, their senders' queue pairs retrying until they fail (cluster.nccl_ib_timeout, "
             "nccl_ib_retry_cnt), which fails the step before the NCCL watchdog when that comes first; 0 = never: the "
             "storm spreads and the step fails at faults.collective_timeout_s",
             "follows cluster.transport: infiniband 268.435456 ms, the head-of-queue lifetime of a leaf port that "
             "drives an end node in NVIDIA's subnet manager (leaf_head_of_queue_lifetime 0x10 = 4.096 us x 2^16; UFM "
             "Subnet Manager default properties; IBA Vol. 1 switch HOQ lifetime); roce 0: no PFC watchdog, the seed "
             "000 fabric; set it for a RoCE switch's PFC watchdog with its drop action (SONiC pfcwd: a detection time "
             "of hundreds of milliseconds, 400 ms in its example)"),
    F_INT("cluster.nccl_ib_timeout", cluster.nccl_ib_timeout, 1, 31, "",
          "NCCL_IB_TIMEOUT: a queue pair's ACK timeout is 4.096 us x 2^value; a sender whose packets are discarded "
          "(cluster.stall_discard_ms) fails after (nccl_ib_retry_cnt + 1) such timeouts",
          "20 (4.29 s): NCCL's default (NVIDIA/nccl src/transport/net_ib.cc, NCCL_PARAM(IbTimeout, \"IB_TIMEOUT\", "
          "20); NCCL user guide, Environment Variables)"),
    F_INT("cluster.nccl_ib_retry_cnt", cluster.nccl_ib_retry_cnt, 0, 7, "",
          "NCCL_IB_RETRY_CNT: how many times a queue pair resends an unacknowledged packet before it fails (the "
          "InfiniBand transport's 3-bit retry count: at most 7)",
          "7: NCCL's default (NVIDIA/nccl src/transport/net_ib.cc, NCCL_PARAM(IbRetryCnt, \"IB_RETRY_CNT\", 7))"),
    F_BOOL("cluster.ecn", cluster.ecn, "",
           "with cluster.pfc: switches mark ECN on a queue past a threshold below the pause threshold and the "
           "senders of the marked flows cut their rate (DCQCN on RoCE; InfiniBand's congestion control likewise), "
           "so an incast slows only its own senders and its pause does not spread to the traffic queued beside it "
           "(no victims, step.breakdown.pfc_pause_s 0); a receiver that stops draining still fills the queues and "
           "its pause storm spreads as without ECN (sim/exec/pfc_spread.h)",
           "off (as Meta runs its 400G RoCE training fabric: PFC without DCQCN, Gangidi et al., SIGCOMM 2024); on: "
           "DCQCN (Zhu et al., Congestion Control for Large-Scale RDMA Deployments, SIGCOMM 2015: ECN marking ahead "
           "of PFC so that pauses, and the victims of their head-of-line blocking, become rare); seed 000 question 2"),
    F_ENUM("cluster.retransmission", cluster.retransmission, scn_retx_names, "",
           "how the NICs recover a packet a lossy link (faults.links[].loss_rate) drops: go-back-n resends everything "
           "sent after it, goodput (1 - p) / (1 + p W) with W the packets of one round trip (line rate x 2 x "
           "latency_us.cross_leaf / 4096 B MTU); selective resends only the lost packet, goodput 1 - p "
           "(sim/scenario/link_loss.h)",
           "go-back-n: InfiniBand RC and RoCE NICs recover by go-back-N (Mittal et al., Revisiting network support for "
           "RDMA, SIGCOMM 2018, section 2)"),
    F_ENUM("cluster.path_selection", cluster.path_selection, scn_path_selection_names, "",
           "how a leaf spreads its cross-leaf traffic over the ports of its uplink bundle to the rail's spines: adaptive "
           "= adaptive routing or packet spraying, every port evenly (the bundle is one link of leaf_down_ports x NIC / "
           "oversubscription); ecmp = static hashing: the bundle is leaf_down_ports / oversubscription ports at the NIC's "
           "line rate (a whole number), and each queue pair of a GPU pair is hashed once, from the GPUs, its index and "
           "the scenario seed, onto one port p, up-port p of its leaf and down-port p of the destination leaf, for its "
           "whole life: flows that collide on a port share it while other ports idle (platforms/fabric_geometry.h)",
           "adaptive: the fabric as moesim priced it before this field; ecmp: a RoCE fabric without adaptive routing, as "
           "Meta's first training fabric (Gangidi et al., RDMA over Ethernet for Distributed AI Training at Meta Scale, "
           "SIGCOMM 2024; Meta engineering blog, 2024-08-05, \"ECMP and path pinning\": poor performance from low flow "
           "entropy)"),
    F_INT("cluster.qps_per_connection", cluster.qps_per_connection, 1, 64, "",
          "queue pairs per connection between two GPUs; under path_selection ecmp each is hashed onto its own uplink "
          "port and carries an equal share of the pair's bytes (more entropy, fewer collisions); no effect under adaptive",
          "1: NCCL_IB_QPS_PER_CONNECTION's default (NVIDIA NCCL user guide, Environment Variables; NVIDIA/nccl "
          "src/transport/net_ib.cc)"),
    F_NONNEG("cluster.latency_us.nvlink", cluster.latency_us.nvlink, "us", "latency of one NVLink/NVSwitch transfer",
             "assumed typical value, not from a publication: calibrate it"),
    F_NONNEG("cluster.latency_us.same_leaf", cluster.latency_us.same_leaf, "us", "GPU to GPU latency through NICs and one leaf switch",
             "assumed typical value, not from a publication: calibrate it"),
    F_NONNEG("cluster.latency_us.cross_leaf", cluster.latency_us.cross_leaf, "us", "GPU to GPU latency through a spine switch",
             "assumed typical value, not from a publication: calibrate it"),
    F_NONNEG("cluster.latency_us.cross_pod", cluster.latency_us.cross_pod, "us",
             "GPU to GPU latency between two pods (cluster.pod_nodes), through the core switch tier",
             "assumed: cross_leaf + 0.9 us, the same step the spine adds over the leaf; not from a publication: "
             "calibrate it"),
    F_INT_AUTO("cluster.pod_nodes", cluster.pod_nodes, 1, MAX_NODES, "nodes",
               "a third switch tier: the nodes of one pod (consecutive node ids, a multiple of leaf_down_ports: whole "
               "leaves); each rail's spines serve one pod, and a pod reaches the others through its core uplinks "
               "(cluster.pod_oversubscription), with the rail-optimized routes kept inside a pod; the job fills pods "
               "in node order, contiguous first, as a topology-aware scheduler places it (\"auto\" = one pod: the "
               "two-tier fabric)",
               "auto: the two-tier fabric moesim priced before this field; pods: Meta's \"AI zones\", two-tier "
               "Clos fabrics joined by an aggregation tier (Gangidi et al., RDMA over Ethernet for Distributed AI "
               "Training at Meta Scale, SIGCOMM 2024), and the 3-tier fat tree of pods under a core tier "
               "(Cornelis CN5000 topology guide, 3-tier fat trees: 48 pods of 576 "
               "endpoints at 1:1)"),
    F_DBL("cluster.pod_oversubscription", cluster.pod_oversubscription, 1, INFINITY, 0, "ratio",
          "a pod's spine downlink to core uplink bandwidth per rail: the pod's leaf uplinks together over this "
          "ratio cross to the other pods (1 = non-blocking)",
          "1: non-blocking; Meta's cross-zone aggregation tier is oversubscribed (SIGCOMM 2024, as above), the "
          "ratio is not in the material this project holds"),
    F_POS("cluster.storage_GBps", cluster.storage_GBps, "GB/s",
          "aggregate write bandwidth of the parallel file system available to this job (checkpoints); each node is further "
          "limited by its own storage link (one NIC, capped by PCIe)",
          "Llama 3 (Dubey et al. 2024, section 3.3.1): Meta's Tectonic file system sustains 2 TB/s (7 TB/s peak) for 16,384 "
          "H100 GPUs, i.e. 122 MB/s per GPU; scaled to the preset's 4096 GPUs: 500 GB/s"),
    F_POS("cluster.host_mem_GiB", cluster.host_mem_GiB, "GiB", "host memory per node (holds async checkpoint snapshots)",
          "DGX H100: 2 TB system memory"),
    F_POS("cluster.pcie_GBps", cluster.pcie_GBps, "GB/s", "GPU to host bandwidth per GPU per direction (snapshots, per-node storage cap)",
          "PCIe 5.0 x16: 32 GT/s x 16 lanes, about 64 GB/s per direction"),
    F_INT_AUTO("cluster.nvlink_domain_gpus", cluster.nvlink_domain_gpus, 1, MAX_NODES, "GPUs",
               "GPUs of one NVLink domain (consecutive ids, a multiple of gpus_per_node): the all-to-all's DeepEP "
               "aggregation, node-limited routing (routing.node_limit counts domains) and EP placement work per "
               "domain; rails and leaf/spine switches connect the nodes' NICs above it (\"auto\" = gpus_per_node)",
               "NVIDIA GB200 / GB300 NVL72: 72 GPUs in one NVLink domain"),

    F_INT("layout.tp", layout.tp, 1, MAX_PAR, "", "tensor parallelism of attention and dense blocks, with sequence parallelism (the experts' too unless layout.etp says otherwise)",
          DSV3_REPORT ", section 3.2: trained without tensor parallelism"),
    F_INT("layout.pp", layout.pp, 1, MAX_PAR, "", "pipeline stages", DSV3_REPORT ", section 3.2: 16-way pipeline parallelism"),
    F_INT("layout.ep", layout.ep, 1, MAX_PAR, "", "expert parallelism: GPUs sharing one copy of a block's routed experts",
          DSV3_REPORT ", section 3.2: 64-way expert parallelism over 8 nodes"),
    F_INT("layout.dp", layout.dp, 1, MAX_PAR, "", "replicas of the experts beyond EP; etp*pp*ep*dp must equal the GPU count (attention data parallelism per stage is GPUs / (tp*cp*pp))",
          "4096 / (1 x 16 x 64)"),
    F_INT("layout.zero", layout.zero, 0, 3, "", "ZeRO stage of the data-parallel optimizer state (0 = none)", DSV3_REPORT ", section 3.2: ZeRO-1"),
    F_INT("layout.micro_batch", layout.micro_batch, 1, NOMAX, "sequences", "sequences per micro-batch per attention-data-parallel rank"),
    F_INT("layout.global_batch", layout.global_batch, 1, NOMAX, "sequences", "sequences per optimizer step",
          DSV3_REPORT ", training hyper-parameters: the batch size ramps up to 15,360 sequences"),
    F_ENUM("layout.schedule", layout.schedule, scn_schedule_names, "",
           "pipeline schedule; \"interleaved\": micro-batches per pipeline a multiple of pp; \"dualpipe\": an even pp "
           "and an even number of micro-batches, at least 2*pp (deepseek-ai/DualPipe asserts both), and at pp = 1 "
           "(no pipeline) the layout runs 1F1B", DSV3_REPORT ", section 3.2.1: DualPipe"),
    F_INT("layout.vpp", layout.vpp, 1, NOMAX, "", "virtual pipeline chunks per rank (interleaved 1F1B)"),
    F_ENUM("layout.recompute", layout.recompute, scn_recompute_names, "",
           "activation recomputation: none, selective (attention and activations) or full blocks",
           "none; DeepSeek-V3 on 80 GB GPUs needs selective (its report recomputes RMSNorm and the MLA up-projections), "
           "as the shipped scenarios set"),
    F_ENUM("layout.placement", layout.placement, scn_placement_names, "",
           "rank to GPU mapping: ep-inner puts an EP group on consecutive nodes (under as few leaf switches as possible), dp-inner the replicas"),
    F_NSTR("layout.pipeline_layout", layout.pipeline_layout, "",
           "Megatron-LM --pipeline-model-parallel-layout: E embedding, t block, m MTP module, L loss, | between stages, "
           "(...)*n repetition, e.g. \"Et|(tt|)*30mL\"; one stage per pp x vpp model stage, every block once (null = the even split)",
           "Megatron-LM docs/api-guide/pipeline_parallel_layout.md"),
    F_INT_AUTO("layout.first_stage_layers", layout.first_stage_layers, 1, NOMAX, "blocks",
               "blocks of the first pipeline rank, spread over its vpp chunks; the other ranks share the rest evenly (\"auto\" = the even split)",
               "Megatron-LM --decoder-first-pipeline-num-layers"),
    F_INT_AUTO("layout.last_stage_layers", layout.last_stage_layers, 1, NOMAX, "blocks",
               "blocks of the last pipeline rank, spread over its vpp chunks (\"auto\" = the even split)",
               "Megatron-LM --decoder-last-pipeline-num-layers"),
    F_INT_AUTO("layout.etp", layout.etp, 1, MAX_PAR, "",
               "expert tensor parallelism (Megatron's MoE parallel folding): the expert side folds each stage's GPUs as "
               "etp x ep x dp, the attention side as tp x cp x attention DP; with etp < tp every rank routes its own "
               "sequence-parallel tokens (\"auto\" = layout.tp)",
               "Megatron-LM --expert-tensor-parallel-size"),
    F_INT("layout.cp", layout.cp, 0, MAX_PAR, "",
          "context parallelism: each sequence split over cp ranks (load-balanced causal chunks), attention exchanging "
          "keys and values over layout.cp_comm; attention DP = GPUs / (tp x cp x pp); 0 and 1 both mean none",
          "Megatron-LM --context-parallel-size"),
    F_BOOL("layout.moe_a2a_overlap", layout.moe_a2a_overlap, "",
           "1F1B / interleaved 1F1B pair each steady-state forward with a backward of another micro-batch and run their "
           "all-to-alls on the communication stream under each other's compute (weight gradients of the experts while "
           "the combine is in flight); DualPipe does this by itself",
           "Megatron-LM overlap_moe_expert_parallel_comm with delay_wgrad_compute"),
    F_BOOL("layout.overlap_grad_reduce", layout.overlap_grad_reduce, "",
           "ZeRO 0/1: the data-parallel gradient reduction runs bucket by bucket on the data-parallel stream under the last "
           "micro-batch's backward (buckets of max(40M, 1M x dense data-parallel ranks) parameters filled in backprop order; "
           "only the first model chunk of pipeline rank 0 is cut into buckets, every other chunk is one bucket), the "
           "distributed optimizer's reduce-scatter per bucket (ZeRO 1; all-reduce with ZeRO 0), and the parameter all-gathers "
           "under the first forward, each unit waiting for its bucket (overlap_param_gather, the steady state's: the "
           "previous update's gathers); false = one gradient collective per group at the step's tail and, with ZeRO 1, "
           "the gather after the optimizer. ZeRO 2/3 reduce unit by unit either way",
           "true, as every Megatron-Bridge recipe sets it with overlap_param_gather (NVIDIA-NeMo/Megatron-Bridge at "
           "067f987d, src/megatron/bridge/recipes/common.py); bucket rules: NVIDIA/Megatron-LM at d98e8a64, "
           "megatron/core/distributed/distributed_data_parallel.py and param_and_grad_buffer.py, megatron/training/training.py"),
    F_ENUM_SET("layout.recompute_modules", layout.recompute_modules, scn_recompute_module_names, "",
               "selective recompute of these modules (Megatron's names): core_attn the attention core, mla_up_proj MLA's "
               "up-projections, layernorm the RMSNorm outputs, mlp the dense MLP, moe_act the experts' activation, moe "
               "the whole MoE layer (not its all-to-alls), shared_experts the shared experts; [] = layout.recompute's set",
               "Megatron-LM --recompute-modules"),
    F_ENUM("layout.cp_comm", layout.cp_comm, scn_cp_comm_names, "",
           "context parallelism's key/value exchange: p2p (ring attention, one step per ring position overlapped with "
           "the attention chunks) or all_gather (one all-gather before attention)", "Megatron-LM --cp-comm-type"),

    F_ENUM("routing.distribution", routing.distribution, scn_route_names, "",
           "expert popularity: uniform, zipf (rank^-s), hot (one expert gets hot_share of the tokens) or trace (per-expert counts from routing.trace)"),
    F_POS("routing.zipf_s", routing.zipf_s, "", "zipf: the exponent s of expert popularity rank^-s"),
    F_INT("routing.hot_expert", routing.hot_expert, 0, NOMAX, "", "hot: the expert id that gets hot_share of the tokens"),
    F_DBL("routing.hot_share", routing.hot_share, 0, 1, SCN_MIN_OPEN, "fraction", "hot: the share of all token-expert pairs that go to the hot expert"),
    F_INT("routing.node_limit", routing.node_limit, 0, NOMAX, "nodes", "node-limited routing: a token's experts span at most this many nodes (0 = unlimited)",
          "the model preset: 4 for deepseek-v3 (" DSV3_REPORT ", section 2.1.2: each token sent to at most 4 nodes), 0 for the others and a model without a preset"),
    F_NONNEG("routing.capacity_factor", routing.capacity_factor, "",
             "tokens per expert are capped at factor x tokens x top_k / experts (0 = no cap); Switch Transformer "
             "(Fedus et al. 2022) used factors of 1.0 to 1.25, the reference design 1.25 with dropping",
             "0 (dropless) for every model preset (" DSV3_REPORT ", section 2.1.2: DeepSeek-V3 does not drop any tokens; the others publish no capacity) and a model without a preset"),
    F_BOOL("routing.drop", routing.drop, "", "tokens over an expert's capacity are dropped (and reported); false = dropless, the hot rank takes longer",
           "false for every model preset and a model without a preset"),
    F_NSTR("routing.trace", routing.trace, "path", "trace: the expert-load file (format below); relative to the current folder, then to the scenario's"),
    F_ENUM("routing.dispatcher", routing.dispatcher, scn_dispatcher_names, "",
           "the MoE token dispatcher: deepep (DeepEP) and hybridep (HybridEP) send a token once per destination rank "
           "and one RDMA copy per destination node, fanned out over NVLink (the same bytes; their kernels and host work "
           "differ); alltoall permutes the tokens by expert and sends every token-expert pair on its own through an NCCL "
           "all-to-all (no deduplication)",
           "Megatron-LM --moe-token-dispatcher-type flex (--moe-flex-dispatcher-backend deepep / hybridep) or alltoall"),
    F_INT("routing.redundant_experts", routing.redundant_experts, 0, 1 << 20, "expert slots",
          "redundant experts (DeepSeek's EPLB): extra expert slots per EP group, each holding a replica of the expert with "
          "the most expected load per copy (EPLB's replicate rule), packed onto the least loaded ranks; a replicated "
          "expert's tokens are split evenly over its copies. With routing.eplb_interval_steps 0 the placement follows the "
          "law's expected loads at every step, for free (an oracle)",
          "github deepseek-ai/EPLB (eplb.py: replicate_experts, balanced_packing); " DSV3_REPORT ", section 3.4 (redundant experts)"),
    F_INT("routing.eplb_interval_steps", routing.eplb_interval_steps, 0, 1 << 20, "steps",
          "EPLB as deployed: 0 = the oracle placement of routing.redundant_experts (the law's expected loads, every step, "
          "free); K > 0 = EPLB's full rebalance (hierarchical when the EP group's nodes divide model.expert_groups, global "
          "otherwise) from the per-expert token counts the steps since the last rebalance routed, at every K-th step of "
          "routing.steps (step 0 starts from EPLB on equal loads), the placement held in between; the step of a rebalance "
          "pays the moved experts' weights and optimizer state as point-to-point traffic (step.steps.series.eplb_rebalance_s), "
          "and every step the gradient all-reduce among each replicated expert's copies (step.steps.series.eplb_grad_sync_s). "
          "Needs routing.redundant_experts a multiple of layout.ep",
          "github deepseek-ai/EPLB (README: hierarchical and global load balancing; eplb.py: rebalance_experts)"),
    F_ENUM("routing.group_samples", routing.group_samples, scn_group_samples_names, "",
           "which routing sample the EP groups of each (MoE layer, micro-batch) take: independent = the data-parallel "
           "replicas route with 2 sample streams (replica d takes stream d mod 2; stream 0 is the shared mode's), each its "
           "own samples of the law, and the step waits for the slower (each stream is a replica the step level simulates; "
           "the replicas' routing noise averages over their thousands of all-to-alls: see the \"replica_routing\" and "
           "\"replica_wait\" entries of the step's breakdown); shared = every replica takes replica 0's samples "
           "(bit-identical replicas, simulated once). The TP indices of a replica share its samples either way (they route "
           "the tokens their TP group gathered), and balanced routing, whose loads the law fixes, is shared either way. The "
           "samples come from the step's pool of 4 draws per law, mapped to (layer, micro-batch, stream) by the seed",
           "independent: each replica's routers see their own tokens in a real run"),
    F_INT("routing.steps", routing.steps, 1, 100000, "steps",
          "consecutive training steps the step level simulates, the routing law drifting between them (routing.drift.*: "
          "popularity walk, a hot expert that appears and decays, bias balancing); results add step.steps (p50/p95/max and "
          "the per-step series) and the run level uses their mean; 1 = one step"),
    F_NONNEG("routing.drift.walk_sigma", routing.drift.walk_sigma, "logit/step",
             "routing.steps > 1: standard deviation of each expert's per-step Gaussian log-popularity step (a seeded random "
             "walk; 0 = popularity fixed)", "assumption: 0"),
    F_FRAC("routing.drift.walk_reversion", routing.drift.walk_reversion, "1/step",
           "routing.steps > 1: share of its log-popularity each expert loses per step (an AR(1) walk; 0 = a pure random walk)",
           "assumption: 0"),
    F_INT("routing.drift.hot_onset_step", routing.drift.hot_onset_step, 0, 100000, "step",
          "the step (0-based) at which routing.hot_expert turns hot, with routing.drift.hot_peak_share of the tokens",
          "assumption: 0"),
    F_FRAC("routing.drift.hot_peak_share", routing.drift.hot_peak_share, "fraction",
           "share of the tokens routing.hot_expert takes at the onset step, decaying as exp(-(t - onset) / hot_decay_steps) "
           "(routing.distribution \"uniform\" only; 0 = no hot expert appears)", "assumption: 0"),
    F_POS("routing.drift.hot_decay_steps", routing.drift.hot_decay_steps, "steps",
          "e-folding time of the hot expert's share after its onset", "assumption: 50 steps"),
    F_INT("routing.drift.hot_rise_steps", routing.drift.hot_rise_steps, 0, 100000, "steps",
          "steps the hot expert's share takes to grow to its peak: (t - onset + 1) / (rise + 1) of hot_peak_share at "
          "onset <= t < onset + rise, the peak at onset + rise, then the decay from there (0 = the peak at the onset)",
          "assumption: 0"),
    F_NONNEG("routing.drift.bias_update_speed", routing.drift.bias_update_speed, "logit/step",
             "DeepSeek-V3's auxiliary-loss-free balancing: after each step every expert's routing bias (added to its "
             "affinity for the top-k choice only) moves by +this when the expert was underloaded, -this when overloaded; "
             "0 = off. In logit units here (DeepSeek's affinities are sigmoid scores)",
             DSV3_REPORT ", sections 2.1.2 and 4.2: bias update speed 0.001 for the first 14.3T tokens"),

    F_ENUM("precision.compute", precision.compute, scn_compute_names, "",
           "GEMM precision and recipe: fp8 is DeepSeek's blockwise 1x128 / 128x128 scaling, fp8-cs per-tensor current "
           "scaling, fp8-ds per-tensor delayed scaling (amax history), mxfp8 and nvfp4 the block-scaled microscaling "
           "formats; each recipe's GEMM kernel and quantization passes: sim/plan/recipes.h",
           "the model preset's published training: FP8 for deepseek-v3 (" DSV3_REPORT ", section 3.3), BF16 for the others and a model without a preset"),
    F_ENUM("precision.dispatch", precision.dispatch, scn_dtype_names, "", "precision of the MoE dispatch all-to-all",
           "follows precision.compute: fp8 (DeepSeek's blockwise recipe, " DSV3_REPORT ", section 3.3) dispatches FP8; "
           "fp8-cs, fp8-ds, mxfp8, nvfp4 and the 16/32-bit types dispatch BF16 (Megatron-Core quantizes inside the expert GEMMs)"),
    F_ENUM("precision.combine", precision.combine, scn_dtype_names, "", "precision of the MoE combine all-to-all", "the model preset: BF16 (" DSV3_REPORT ", section 3.3, keeps the combine in BF16)"),
    F_BOOL("precision.quantization_free", precision.quantization_free, "",
           "the recipe's quantize, transpose-quantize, amax and scale-swizzle kernels take no GPU time (their launches stay "
           "on the host): what a step would gain from quantizing inside the GEMMs, and the FP8-recipe row of the "
           "validation's ablation table",
           "false: every pass TransformerEngine 2.14.1 runs (sim/plan/recipes.h)"),
    F_ENUM("precision.master", precision.master, scn_dtype_names, "", "precision of the master weights and optimizer moments", "FP32 in every model preset"),

    F_NSTR("calibration", calibration, "path",
           "the cost model (calibration/models/*.json) that prices compute and links; null = the built-in analytic pricing; relative to the current folder, then to the scenario's",
           "the cluster preset's GPU: calibration/models/<gpu>-published.json (public specifications, not measured)"),

    F_ENUM("reliability.failure_model", reliability.failure_model, scn_failure_model_names, "",
           "classes: gpu_mtbf_h split over failure classes, one process per class for the whole job (reliability.classes.*); "
           "components: every unit of every component kind fails on its own, with its count, MTBF, Weibull shape and blast "
           "radius (reliability.components.*). The other model's fields are not used"),
    F_POS("reliability.gpu_mtbf_h", reliability.gpu_mtbf_h, "h",
          "mean time between failures per GPU, all failure classes together; the cluster MTBF is this over the GPU count",
          "the reference design's assumption (about three years per GPU: 26,000 h, 6.35 h for 4096 GPUs). Llama 3's 419 "
          "unexpected interruptions in 54 days on 16,384 H100 imply 16,384 x 54 x 24 / 419 = 50,700 h per GPU (3.1 h for "
          "16,384 GPUs, 12.4 h for 4096): the default is about twice as pessimistic"),
    F_ENUM("reliability.distribution", reliability.distribution, scn_failure_dist_names, "", "distribution of the time between failures"),
    F_POS("reliability.weibull_shape", reliability.weibull_shape, "", "weibull: the shape k (k < 1: failures cluster early, as in HPC failure logs)",
          "Schroeder and Gibson, DSN 2006: shapes of 0.7 to 0.8 fit the time between failures of HPC systems"),
    F_NSTR("reliability.failure_trace", reliability.failure_trace, "path",
           "replay this failure log (format below) instead of drawing failures; relative to the current folder, then to the scenario's"),
    F_CLASS("gpu", FAIL_GPU, "GPU failures (faulty GPU, SRAM, GSP, silent data corruption, thermal)"),
    F_CLASS("hbm", FAIL_HBM, "HBM memory failures"),
    F_CLASS("nic", FAIL_NIC, "NIC failures"),
    F_CLASS("nvlink", FAIL_NVLINK, "NVLink failures (Llama 3 counts none separately: 0)"),
    F_CLASS("switch", FAIL_SWITCH, "network switch or cable failures"),
    F_CLASS("host", FAIL_HOST, "host failures (maintenance, SSD, power, chassis, CPU, memory)"),
    F_CLASS("software", FAIL_SOFTWARE, "software failures (bugs, dependencies, NCCL watchdog timeouts)"),
    F_COMP("gpu", COMP_GPU, "GPUs, one per GPU; a failure takes its node out of the job"),
    F_COMP("nic", COMP_NIC, "NICs, one per GPU; a failure takes its node out of the job"),
    F_COMP("host", COMP_HOST, "hosts, one per node; a failure takes the node out of the job"),
    F_COMP("leaf_switch", COMP_LEAF_SWITCH,
           "leaf switches, rails x leaves per rail; a failure takes rail k of the cluster.leaf_down_ports nodes under it, "
           "so those nodes, out of the job"),
    F_COMP("spine_switch", COMP_SPINE_SWITCH,
           "spine layers, one per rail; traffic reroutes over the other spines: the job restarts in place, no node is lost"),
    F_COMP("rack", COMP_RACK, "racks (power domains) of reliability.components.rack.nodes nodes; a failure takes them all out"),
    F_COMP("software", COMP_SOFTWARE, "software stacks, one per node; a failure restarts the job in place"),
    F_INT("reliability.components.rack.nodes", reliability.rack_nodes, 1, MAX_NODES, "nodes",
          "nodes per rack / power domain: a rack failure's blast radius; correlated failures strike within a rack",
          "Llama 3 (Dubey et al. 2024, section 3.3.1): two 8-GPU servers per rack"),
    F_FRAC("reliability.correlated.probability", reliability.correlated.probability, "fraction",
           "a failure that takes nodes down brings a second failure, a host in the same rack (shared power, cooling, cabling), "
           "with this probability; follow-ons bring none"),
    F_NONNEG("reliability.correlated.delay_s", reliability.correlated.delay_s, "s",
             "mean delay of a correlated follow-on after its failure (exponential)", "assumption: no source"),
    F_ENUM("reliability.checkpoint.policy", reliability.checkpoint.policy, scn_ckpt_policy_names, "",
           "checkpoint interval: fixed (interval_min), young (sqrt(2 delta M)), daly (Daly 2006, higher order) or none",
           REF_DESIGN ": Daly's interval"),
    F_POS("reliability.checkpoint.interval_min", reliability.checkpoint.interval_min, "min", "fixed: the checkpoint interval",
          REF_DESIGN ": every 60 minutes"),
    F_ENUM("reliability.checkpoint.mode", reliability.checkpoint.mode, scn_ckpt_mode_names, "",
           "sync: training stops for the whole write; async: it stops for the snapshot to host memory, the write proceeds in the "
           "background and a checkpoint counts once written", REF_DESIGN ": asynchronous in-memory snapshots"),
    F_AUTO("reliability.checkpoint.state_bytes", reliability.checkpoint.state_bytes, 0, SCN_MIN_OPEN, "bytes",
           "bytes one checkpoint writes; auto = the plan's ledgers: weights, master weights and optimizer moments of the whole model"),
    F_POS("reliability.checkpoint.snapshot_GBps", reliability.checkpoint.snapshot_GBps, "GB/s",
          "GPU to host copy bandwidth per GPU: the training pause of an async checkpoint", "PCIe 5.0 x16, about 64 GB/s per direction"),
    F_AUTO("reliability.checkpoint.write_min", reliability.checkpoint.write_min, 0, 0, "min",
           "time to write one checkpoint; auto = state_bytes over the storage path (cluster.storage_GBps shared by all nodes, "
           "each node limited by its own link)"),
    F_BOOL("reliability.checkpoint.tiers.enabled", reliability.checkpoint.tiers.enabled, "",
           "checkpoint tiers: every snapshot lives in host memory, optionally on a peer node and the local NVMe, every "
           "pfs.every-th on the file system; a failure loses the copies on the nodes it takes down and the restart reads "
           "the newest surviving copy from the fastest tier holding it (recovery times then exclude the state load). "
           "Needs mode async; false: a failure rolls back to the last checkpoint on the file system"),
    F_BOOL("reliability.checkpoint.tiers.host.survives_restart", reliability.checkpoint.tiers.host_survives_restart, "",
           "the host-memory snapshot outlives a restart in place (held by a daemon outside the training process)"),
    F_BOOL("reliability.checkpoint.tiers.peer.enabled", reliability.checkpoint.tiers.peer, "",
           "replicate each snapshot into a peer node's host memory over the training rails (survives its node's loss)",
           REF_DESIGN ": in-memory replicas on peer nodes, restored from a healthy peer in under 45 s"),
    F_AUTO("reliability.checkpoint.tiers.peer.GBps", reliability.checkpoint.tiers.peer_GBps, 0, SCN_MIN_OPEN, "GB/s",
           "per node, the replication's share of the node's NICs; auto = one NIC (cluster.nic_gbps / 8)"),
    F_AUTO("reliability.checkpoint.tiers.peer.read_GBps", reliability.checkpoint.tiers.peer_read_GBps, 0, SCN_MIN_OPEN,
           "GB/s", "per node, a restore from the peer (training is stopped: every NIC); auto = rails x cluster.nic_gbps / 8"),
    F_AUTO("reliability.checkpoint.tiers.peer.step_slowdown", reliability.checkpoint.tiers.peer_step_slowdown, 1, 0, "x",
           "step-time factor while a replication runs (it shares the NICs with training traffic); auto = the bound of a "
           "step limited by its NICs: 1 / (1 - peer.GBps / the node's NIC bandwidth)"),
    F_INT("reliability.checkpoint.tiers.peer.offset_nodes", reliability.checkpoint.tiers.peer_offset_nodes, 0, MAX_NODES,
          "nodes", "node n keeps its replica on node n + offset (mod nodes); 0 = auto: reliability.components.rack.nodes, "
          "the same place one rack over, so that a rack failure does not take a node and its replica"),
    F_BOOL("reliability.checkpoint.tiers.nvme.enabled", reliability.checkpoint.tiers.nvme, "",
           "write each snapshot to the node's local NVMe (survives a restart in place, not the node's loss)"),
    F_POS("reliability.checkpoint.tiers.nvme.write_GBps", reliability.checkpoint.tiers.nvme_write_GBps, "GB/s",
          "per node, NVMe write bandwidth", "assumption: a few PCIe 4 drives per node, no source"),
    F_POS("reliability.checkpoint.tiers.nvme.read_GBps", reliability.checkpoint.tiers.nvme_read_GBps, "GB/s",
          "per node, NVMe read bandwidth", "assumption: a few PCIe 4 drives per node, no source"),
    F_INT("reliability.checkpoint.tiers.pfs.every", reliability.checkpoint.tiers.pfs_every, 1, NOMAX, "",
          "every n-th checkpoint is also written to the parallel file system (the last one always)"),
    F_AUTO("reliability.checkpoint.tiers.pfs.read_GBps", reliability.checkpoint.tiers.pfs_read_GBps, 0, SCN_MIN_OPEN,
           "GB/s", "aggregate read bandwidth of the file system for a restore; auto = cluster.storage_GBps"),
    F_DBL("reliability.recovery.hot_spare_fraction", reliability.recovery.hot_spare_fraction, 0, 1, SCN_MAX_OPEN, "fraction",
          "idle spare nodes, as a fraction of the job's nodes: a failed node is swapped for one instead of waiting for a full restart",
          REF_DESIGN ": 2% hot spares"),
    F_NONNEG("reliability.recovery.spare_swap_s", reliability.recovery.spare_swap_s, "s",
             "time to resume on a hot spare (state restored from peers in memory)", REF_DESIGN ": 60 to 90 s"),
    F_NONNEG("reliability.recovery.full_restart_min", reliability.recovery.full_restart_min, "min",
             "the whole restart cost R: reschedule, reload the checkpoint, warm up", REF_DESIGN ": often over 30 minutes"),
    F_NONNEG("reliability.recovery.repair_h", reliability.recovery.repair_h, "h",
             "time until a failed node is back in the spare pool", "assumption (a day to repair or replace a node): no source"),
    F_INT("reliability.recovery.repair_slots", reliability.recovery.repair_slots, 0, NOMAX, "",
          "repairs that can run at once (technicians, RMA desk), first come first served; 0 = as many as needed"),
    F_FRAC("reliability.stragglers.fraction", reliability.stragglers.fraction, "fraction", "fraction of nodes that turn slow at some time during the run"),
    F_DBL("reliability.stragglers.slowdown", reliability.stragglers.slowdown, 1, INFINITY, 0, "x",
          "step-time factor while a straggler is in the job (the job runs at its slowest node's pace)"),
    F_NONNEG("reliability.stragglers.detect_min", reliability.stragglers.detect_min, "min",
             "time from a straggler's onset until it is taken out like a failed node", "assumption: no source"),
    F_NONNEG("reliability.loss_spikes.per_day", reliability.loss_spikes.per_day, "1/day",
             "batches per day of training that would spike the loss (dirty samples: extreme logits, gradient spikes)"),
    F_ENUM("reliability.loss_spikes.action", reliability.loss_spikes.action, scn_spike_action_names, "",
           "rollback: every spike back to the last checkpoint; skip: every spike's step discarded and its batch skipped; "
           "defend: the activation-norm monitor skips the batch when it sees it, else gradient clipping may tame it, "
           "else (and always for an FP16 overflow the monitor missed) a rollback"),
    F_BOOL("reliability.loss_spikes.monitor.enabled", reliability.loss_spikes.monitor, "",
           "defend: the activation-norm monitor, which skips a batch whose norm exceeds threshold x its window mean",
           "seed 000 section 3.2"),
    F_POS("reliability.loss_spikes.monitor.threshold", reliability.loss_spikes.monitor_threshold, "x",
          "defend: the monitor's threshold over the window mean", "seed 000 section 3.2: 5x the 100-step mean"),
    F_INT("reliability.loss_spikes.monitor.window_steps", reliability.loss_spikes.monitor_window_steps, 0, NOMAX, "steps",
          "defend: the monitor's window; it is armed only that many steps after the job (re)starts",
          "seed 000 section 3.2: the last 100 steps"),
    F_POS("reliability.loss_spikes.norm_ratio_median", reliability.loss_spikes.norm_ratio_median, "x",
          "defend: a spiking batch's activation norm over the healthy mean, lognormal: its median", "assumption: no source"),
    F_NONNEG("reliability.loss_spikes.norm_ratio_sigma", reliability.loss_spikes.norm_ratio_sigma, "",
             "defend: that lognormal's sigma (of the natural log)", "assumption: no source"),
    F_BOOL("reliability.loss_spikes.clipping.enabled", reliability.loss_spikes.clipping, "",
           "defend: gradient clipping (global norm) before the optimizer step"),
    F_FRAC("reliability.loss_spikes.clipping.fraction", reliability.loss_spikes.clip_fraction, "fraction",
           "defend: share of finite gradient spikes clipping tames (the rest still damage the weights: a rollback)",
           "assumption: PaLM (Chowdhery et al. 2022, section 5.1) clipped at global norm 1.0 and still rolled back about "
           "20 spikes"),
    F_FRAC("reliability.loss_spikes.fp16_overflow_fraction", reliability.loss_spikes.fp16_overflow_fraction, "fraction",
           "defend, precision.compute fp16: share of spiking batches whose logits overflow FP16's 65504 to Inf (clipping "
           "cannot tame an Inf; only fp16 overflows here: BF16 has FP32's exponent range, the FP8 recipes scale per block "
           "or tensor and accumulate wider)",
           "assumption; seed 000 section 0.2: attention scores above 65,000 pierced FP16's 65504"),

    {.path = "faults.slow_gpus", .type = SF_OBJ_LIST, .offset = OFF(faults.slow_gpus),
     .size = sizeof(slow_gpu_fault), .count_offset = OFF(faults.n_slow_gpus), .max_count = SCN_MAX_FAULTS,
     .items = SLOW_GPU_ITEMS, .n_items = 2,
     DOC("", "step level: slow GPUs, [{\"gpu\": G, \"factor\": F}]: GPU G computes F times slower")},
    {.path = "faults.links", .type = SF_OBJ_LIST, .offset = OFF(faults.links), .size = sizeof(link_fault),
     .count_offset = OFF(faults.n_links), .max_count = SCN_MAX_FAULTS, .items = LINK_ITEMS, .n_items = 6,
     DOC("", "step level: degraded and lossy links, [{\"gpu\": G, \"kind\": \"nic\"|\"nvlink\", \"factor\": F, \"loss_rate\": P}] "
             "or [{\"kind\": \"uplink\", \"rail\": R, \"leaf\": L, \"factor\": F, \"loss_rate\": P}]: "
             "the link keeps F of its bandwidth, times the goodput of its retransmissions when it loses P of its packets")},
    {.path = "faults.stalls", .type = SF_OBJ_LIST, .offset = OFF(faults.stalls), .size = sizeof(stall_fault),
     .count_offset = OFF(faults.n_stalls), .max_count = SCN_MAX_FAULTS, .items = STALL_ITEMS, .n_items = 3,
     DOC("", "step level: stalled ranks, [{\"gpu\": G, \"layer\": L, \"micro_batch\": M}]: the rank stops there and never "
             "arrives at its next collective (a hang, for simdiag)")},

    F_NONNEG("faults.collective_timeout_s", faults.collective_timeout_s, "s",
             "NCCL watchdog: a rank that waits longer than this inside one collective fails the step (a hung step "
             "fails after it); the run level counts such a step as a failure detected after this delay, then "
             "restarts; 0 = no timeout",
             "off; PyTorch ProcessGroupNCCL's default timeout is 10 min (600 s)"),

    F_ENUM("step.fidelity", step.fidelity, scn_fidelity_names, "",
           "fast: every distinct communication pattern timed once at flow level and memoized; full: every transfer at flow level (<= 256 GPUs)"),
    F_ENUM("step.a2a", step.a2a, scn_a2a_impl_names, "",
           "how the MoE all-to-all moves its bytes at step level: deepep = one RDMA copy per destination node on the "
           "sender's rail, then NVLink fan-out (DeepEP, seed 003); nccl = NCCL all_to_all, one transfer per rank pair, "
           "cross-rail ones forwarded over NVLink to the destination's rail (PXN): a hot expert's GPU is then an incast "
           "on its own NIC. The plan level keeps DeepEP's form",
           "deepep: seed 003 step 3; seed 000 section 0.2: the incident's fix adopted DeepEP"),

    F_ENUM("host.framework", host.framework, scn_host_framework_names, "",
           "whose host side issues the step's kernels (sim/plan/host_costs.h): megatron-core = Megatron-Core with "
           "TransformerEngine in eager PyTorch, a CPU thread per rank issuing every op in program order (framework calls "
           "and kernel launches), waiting for the GPU at its host syncs (a dropless MoE layer's tokens per expert; "
           "pipeline sends without virtual stages); none = every kernel issued in time (no host side)",
           "megatron-core: the framework of the published runs moesim is validated on (Megatron-Bridge v0.4.2)"),
    F_ENUM_SET("host.cuda_graph_scope", host.cuda_graph_scope, scn_cuda_graph_scope_names, "",
               "what CUDA graphs capture, as Megatron's --cuda-graph-impl transformer_engine --cuda-graph-scope: attn (the "
               "attention half of every layer), mlp (a dense layer's MLP), moe_router (the router and the shared experts), "
               "moe_preprocess (the dispatcher's preprocessing before its host sync), moe (the whole MoE MLP) and layer "
               "(the whole layer): the last two only for drop-and-pad MoE (routing.drop with a capacity factor), which has "
               "no host sync. A captured region costs one graph launch instead of its calls and launches; [] = eager",
               "[]: Megatron-Core's default (--cuda-graph-impl none)"),
    F_AUTO("host.call_us", host.call_us, 0, 0, "us",
           "host time of one framework call (a Python module call, an autograd node, a PyTorch dispatcher op); auto = the "
           "jointly calibrated value of host.framework",
           "a PyTorch op recorded by autograd: 12.0 us on an H200 (torch 2.11, calibration/traces/torch-probe-NVIDIA-H200.json); "
           "fitted jointly over the validation cases (calibration/models/global.json)"),
    F_AUTO("host.launch_us", host.launch_us, 0, 0, "us", "host time of one CUDA kernel launch; auto = measured",
           "cudaLaunchKernel on an H200, CUDA 13: 3.7 us median, 3.4 us min (calibration/traces/host-probe-NVIDIA-H200.json); "
           "NVIDIA forum thread 233645: about 3 us"),
    F_AUTO("host.graph_launch_us", host.graph_launch_us, 0, 0, "us", "host time of one CUDA graph launch; auto = measured",
           "cudaGraphLaunch of a 256-node graph on an H200: 4.1 us (calibration/traces/host-probe-NVIDIA-H200.json)"),
    F_AUTO("host.sync_us", host.sync_us, 0, 0, "us",
           "round trip of a host sync once the GPU has drained (a device-to-host read and the thread's wake-up); auto = measured",
           "8-byte cudaMemcpyAsync to pinned memory + cudaStreamSynchronize on an idle H200: 6.5 us "
           "(calibration/traces/host-probe-NVIDIA-H200.json)"),

    F_POS("run.tokens", run.tokens, "tokens", "training tokens to reach",
          "the model preset's published training run (deepseek-v3 14.8T, llama3-* 15T, qwen3-* 36T, kimi-k2 15.5T, "
          "gpt3-175b 300B: sim/scenario/presets.c has the sources); for a model that publishes none, 15T assumed "
          "(" REF_DESIGN ") and the run level warns"),
    F_POS("run.max_days", run.max_days, "days", "a trial stops at this wall-clock time (the deadline)", REF_DESIGN ": a 60-day delivery limit"),
    F_INT("run.trials", run.trials, 1, NOMAX, "", "Monte Carlo trials of the run level (p5/p50/p95 over them)"),
    F_FRAC("run.assumed_mfu", run.assumed_mfu, "fraction",
           "when > 0, the plan's pure_compute_days uses this MFU instead of the plan's own (the back-of-the-envelope); 0 = the plan's"),
    F_ENUM("run.step_sequence", run.step_sequence, scn_step_sequence_names, "",
           "with routing.steps > 1, how the run takes the step level's series: cycle = step i of the run takes series step "
           "i mod routing.steps's time, in order (a slow step lands where it happened, a timed-out step fails the job at "
           "its step, a step redone after a rollback takes its own index's time again); mean = every step takes the mean of "
           "the series' completed steps and the timed-out share times out at random (Poisson in steps)"),

    {.path = "sweep", .type = SF_SWEEP,
     DOC("", "{\"dotted.path\": [values], ...}: the cartesian product of the lists, the first key varying slowest; "
             "{\"zip\": {...}} walks lists in lockstep; \"layouts\": \"all\" every valid tp/pp/ep/dp factorization")},

    F_STR("output.dir", output.dir, SCN_NONEMPTY, "path", "where results go (simrun --out overrides it)"),
    F_BOOL("output.trace", output.trace, "", "write the simulated step as a Perfetto trace (trace.json)"),
    F_BOOL("output.plots", output.plots, "", "draw gnuplot figures for what the sweep varies"),
    {.path = "output.levels", .type = SF_LEVELS, .offset = OFF(output.levels),
     DOC("", "which levels to compute: plan (closed forms), step (one simulated step), run (Monte Carlo of the whole run)")},
    {.path = "output.trace_ranks", .type = SF_INT_LIST, .offset = OFF(output.trace_ranks),
     .size = sizeof(int), .count_offset = OFF(output.n_trace_ranks), .max_count = SCN_MAX_TRACE_RANKS,
     .min = 0, .max = NOMAX, .flags = SCN_RANK_SELECT,
     DOC("", "the ranks that get tracks in trace.json: a list of ranks, \"all\" (large: every op of every rank), "
             "or \"slowest:K\" (the K ranks with the most compute time); [] = a default subset (the first and last "
             "ranks of the first and last stages, the slowest rank, the hot expert's holder, a hang's culprit)")},
};
const int scn_n_fields = (int)(sizeof scn_fields / sizeof scn_fields[0]);
_Static_assert(sizeof scn_fields / sizeof scn_fields[0] <= SCN_MAX_FIELDS, "scenario.given holds a bit per row");

/* ---- what the scenario set itself ---------------------------------------------------------------- */
static int field_index(const scn_field *f) {
    return f >= scn_fields && f < scn_fields + scn_n_fields ? (int)(f - scn_fields) : -1;
}

int scn_field_given(const scenario *s, const scn_field *f) {
    int i = field_index(f);
    return i >= 0 && (s->given[i / 8] >> (i % 8) & 1);
}

int scn_path_given(const scenario *s, const char *path) { return scn_field_given(s, scn_field_find(path)); }

static void mark_given(scenario *s, const scn_field *f) {
    int i = field_index(f);
    if (i >= 0) s->given[i / 8] |= (unsigned char)(1u << (i % 8));
}

/* Values that must agree with another field follow it unless the scenario sets them too: the
 * dispatch precision goes with the compute recipe (preset_dispatch_for), one rail per GPU of a node
 * (check_cluster in scenario.c). */
static void follow(scenario *s, size_t changed) {
    if (changed == offsetof(scenario, precision.compute) && !scn_path_given(s, "precision.dispatch"))
        s->precision.dispatch = preset_dispatch_for(s->precision.compute);
    if (changed == offsetof(scenario, cluster.gpus_per_node) && !scn_path_given(s, "cluster.rails"))
        s->cluster.rails = s->cluster.gpus_per_node;
    if (changed == offsetof(scenario, cluster.transport)) {
        int ib = s->cluster.transport == TRANSPORT_IB;
        if (!scn_path_given(s, "cluster.pfc")) s->cluster.pfc = ib;
        if (!scn_path_given(s, "cluster.stall_discard_ms")) s->cluster.stall_discard_ms = ib ? IB_LEAF_HOQ_LIFETIME_MS : 0;
    }
}

int scn_model_preset_apply(scenario *s, const char *name) {
    model_recipe r;
    if (preset_model_recipe(name, &r)) return -1;
    if (*name) {
        if (preset_model(name, &s->model)) return -1;
    } else {
        preset_custom_model(&s->model);
    }
#define UNLESS_GIVEN(path, lvalue, value) \
    do { if (!scn_path_given(s, path)) lvalue = (value); } while (0)
    UNLESS_GIVEN("precision.compute", s->precision.compute, r.compute);
    UNLESS_GIVEN("precision.combine", s->precision.combine, r.combine);
    UNLESS_GIVEN("precision.master", s->precision.master, r.master);
    UNLESS_GIVEN("routing.node_limit", s->routing.node_limit, r.node_limit);
    UNLESS_GIVEN("routing.capacity_factor", s->routing.capacity_factor, r.capacity_factor);
    UNLESS_GIVEN("routing.drop", s->routing.drop, r.drop);
    UNLESS_GIVEN("run.tokens", s->run.tokens, r.training_tokens > 0 ? r.training_tokens : SCN_ASSUMED_RUN_TOKENS);
#undef UNLESS_GIVEN
    follow(s, offsetof(scenario, precision.compute));
    return 0;
}

/* ---- lookup and suggestions ----------------------------------------------------------------------- */
const scn_field *scn_field_find(const char *path) {
    for (int i = 0; i < scn_n_fields; i++)
        if (strcmp(scn_fields[i].path, path) == 0) return &scn_fields[i];
    return NULL;
}

int scn_path_is_section(const char *path) {
    size_t n = strlen(path);
    if (n == 0) return 1;
    for (int i = 0; i < scn_n_fields; i++)
        if (strncmp(scn_fields[i].path, path, n) == 0 && scn_fields[i].path[n] == '.') return 1;
    return 0;
}

#define MAX_CANDIDATES 128
#define NAME_LEN 64

/* The distinct child names of section `prefix` ("" = top level), in table order. */
static int section_children(const char *prefix, char names[][NAME_LEN], int cap) {
    size_t n = strlen(prefix);
    int count = 0;
    for (int i = 0; i < scn_n_fields && count < cap; i++) {
        const char *p = scn_fields[i].path;
        if (n > 0) {
            if (strncmp(p, prefix, n) != 0 || p[n] != '.') continue;
            p += n + 1;
        }
        size_t len = strcspn(p, ".");
        if (len >= NAME_LEN) continue;
        int dup = 0;
        for (int j = 0; j < count && !dup; j++) dup = strlen(names[j]) == len && strncmp(names[j], p, len) == 0;
        if (dup) continue;
        memcpy(names[count], p, len);
        names[count][len] = '\0';
        count++;
    }
    return count;
}

/* Length of the common leading part of two dotted paths. */
static size_t common_prefix(const char *a, const char *b) {
    size_t n = 0;
    while (a[n] && a[n] == b[n]) n++;
    return n;
}

const char *scn_field_suggest(const char *prefix, const char *key) {
    static char best[256];
    /* The right name at the wrong depth ({"pp": 16} at the top): the full path of the field with
     * that name, the one nearest to where it was written ({"cluster": {"name": ..}} -> cluster.gpu.name). */
    const char *exact = NULL;
    size_t exact_len = 0;
    for (int i = 0; i < scn_n_fields; i++) {
        const char *dot = strrchr(scn_fields[i].path, '.');
        if (!dot || strcmp(dot + 1, key) != 0) continue;
        size_t len = common_prefix(scn_fields[i].path, prefix);
        if (!exact || len > exact_len) { exact = scn_fields[i].path; exact_len = len; }
    }
    if (exact) {
        snprintf(best, sizeof best, "%s", exact);
        return best;
    }
    char names[MAX_CANDIDATES][NAME_LEN];
    const char *cand[MAX_CANDIDATES + 1];
    int n = section_children(prefix, names, MAX_CANDIDATES);
    for (int i = 0; i < n; i++) cand[i] = names[i];
    cand[n] = NULL;
    const char *hit = moe_did_you_mean(key, cand);
    if (!hit) return NULL;
    snprintf(best, sizeof best, "%s", hit);
    return best;
}

const char *scn_path_suggest(const char *path) {
    const char *dot = strrchr(path, '.');
    if (!dot) return scn_field_suggest("", path); /* "pp" -> "layout.pp" */
    const char *cand[sizeof scn_fields / sizeof scn_fields[0] + 1];
    int n = 0;
    for (int i = 0; i < scn_n_fields; i++)
        if (scn_fields[i].type != SF_FORMAT && scn_fields[i].type != SF_SWEEP) cand[n++] = scn_fields[i].path;
    cand[n] = NULL;
    const char *hit = moe_did_you_mean(path, cand);
    return hit ? hit : scn_field_suggest("", dot + 1);
}

/* ---- formatting: json_shown / json_format_number (sim/base/json_read.h) ---------------------------- */

/* What a field accepts, in words, for "expected ..." */
static void range_words(const scn_field *f, int integer, char *buf, size_t cap) {
    /* an integer field always has an upper bound: its own, else what an int holds (NOMAX) */
    int has_lo = f->min > -INFINITY, has_hi = integer ? 1 : f->max < INFINITY;
    int lo_open = f->flags & SCN_MIN_OPEN, hi_open = f->flags & SCN_MAX_OPEN;
    if (integer && has_lo && has_hi) snprintf(buf, cap, "in %.10g..%.10g", f->min, f->max);
    else if (has_lo && has_hi)
        snprintf(buf, cap, "in %c%.10g, %.10g%c", lo_open ? '(' : '[', f->min, f->max, hi_open ? ')' : ']');
    else if (has_lo) snprintf(buf, cap, "%s %.10g", lo_open ? ">" : ">=", f->min);
    else if (has_hi) snprintf(buf, cap, "%s %.10g", hi_open ? "<" : "<=", f->max);
    else buf[0] = '\0';
}

static void names_words(const char *const *names, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; names[i] && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s\"%s\"", i ? ", " : "", names[i]);
}

static void expect_words(const scn_field *f, char *buf, size_t cap) {
    char r[96], nm[256];
    switch (f->type) {
    case SF_INT: range_words(f, 1, r, sizeof r); snprintf(buf, cap, "an integer %s", r); break;
    case SF_U64: snprintf(buf, cap, "an integer in 0..2^53"); break;
    case SF_DOUBLE: range_words(f, 0, r, sizeof r); snprintf(buf, cap, "a finite number %s", r); break;
    case SF_BOOL: snprintf(buf, cap, "true or false"); break;
    case SF_STRING:
        snprintf(buf, cap, "a %sstring of at most %zu characters%s", (f->flags & SCN_NONEMPTY) ? "non-empty " : "",
                 f->size - 1, (f->flags & SCN_IDENT) ? " (letters, digits, '.', '_', '+', '-')" : "");
        break;
    case SF_NSTRING: snprintf(buf, cap, "a string of at most %zu characters, or null", f->size - 1); break;
    case SF_ENUM: names_words(f->names, nm, sizeof nm); snprintf(buf, cap, "one of %s", nm); break;
    case SF_AUTO: range_words(f, 0, r, sizeof r); snprintf(buf, cap, "\"auto\" or a number %s", r); break;
    case SF_INT_AUTO: range_words(f, 1, r, sizeof r); snprintf(buf, cap, "\"auto\" or an integer %s", r); break;
    case SF_ENUM_SET: names_words(f->names, nm, sizeof nm); snprintf(buf, cap, "a list of distinct names among %s", nm); break;
    case SF_LEVELS:
        names_words(scn_level_names, nm, sizeof nm);
        snprintf(buf, cap, "a non-empty list of %s", nm);
        break;
    case SF_INT_LIST:
        range_words(f, 1, r, sizeof r);
        snprintf(buf, cap, "a list of at most %d integers %s%s", f->max_count, r,
                 (f->flags & SCN_RANK_SELECT) ? ", \"all\", or \"slowest:K\" (K >= 1)" : "");
        break;
    case SF_OBJ_LIST: {
        size_t n = 0;
        nm[0] = '\0';
        for (int i = 0; i < f->n_items; i++)
            n += (size_t)snprintf(nm + n, sizeof nm - n, "%s\"%s\": ...", i ? ", " : "", f->items[i].path);
        snprintf(buf, cap, "a list of at most %d objects {%s}", f->max_count, nm);
        break;
    }
    case SF_PRESET: names_words(f->names, nm, sizeof nm); snprintf(buf, cap, "a preset: %s (or null)", nm); break;
    case SF_FORMAT: snprintf(buf, cap, "\"%s\"", SCN_FORMAT); break;
    case SF_SWEEP: snprintf(buf, cap, "an object of \"dotted.path\": [values]"); break;
    }
}

void scn_field_expect_words(const scn_field *f, char *buf, size_t cap) { expect_words(f, buf, cap); }

const char *scn_field_type_name(const scn_field *f) {
    switch (f->type) {
    case SF_INT: case SF_U64: return "integer";
    case SF_DOUBLE: return "number";
    case SF_BOOL: return "boolean";
    case SF_STRING: return "string";
    case SF_NSTRING: return "string or null";
    case SF_ENUM: return "enum";
    case SF_AUTO: return "number or \"auto\"";
    case SF_INT_AUTO: return "integer or \"auto\"";
    case SF_LEVELS: return "list of levels";
    case SF_ENUM_SET: return "list of names";
    case SF_INT_LIST: return (f->flags & SCN_RANK_SELECT) ? "list of integers, \"all\" or \"slowest:K\"" : "list of integers";
    case SF_OBJ_LIST: return "list of objects";
    case SF_PRESET: return "preset name or null";
    case SF_FORMAT: return "string";
    case SF_SWEEP: return "object";
    }
    return "?";
}

const char *scn_field_default_preset(const scn_field *f) {
    if (f->type == SF_PRESET) return NULL;
    /* precision, routing constraints and training tokens: the model's own published training
     * (preset_model_recipe) */
    if (strncmp(f->path, "model.", 6) == 0 || strncmp(f->path, "precision.", 10) == 0 ||
        strcmp(f->path, "routing.node_limit") == 0 || strcmp(f->path, "routing.capacity_factor") == 0 ||
        strcmp(f->path, "routing.drop") == 0 || strcmp(f->path, "run.tokens") == 0)
        return "model.preset";
    /* the cost model follows the cluster preset's GPU (set_preset) */
    if (strncmp(f->path, "cluster.", 8) == 0 || strcmp(f->path, "calibration") == 0) return "cluster.preset";
    return NULL;
}

static int bad_json(moe_error *err, const char *file, const char *label, const cJSON *v,
                    const scn_field *f, const char *extra) {
    char val[128], exp[400];
    json_shown(v, val, sizeof val);
    expect_words(f, exp, sizeof exp);
    return moe_error_input(err, file, label, val, "%s%s", exp, extra ? extra : "");
}

/* ---- numeric helpers ------------------------------------------------------------------------------ */
static int in_range(const scn_field *f, double v) {
    if ((f->flags & SCN_MIN_OPEN) ? !(v > f->min) : !(v >= f->min)) return 0;
    if ((f->flags & SCN_MAX_OPEN) ? !(v < f->max) : !(v <= f->max)) return 0;
    return 1;
}

/* A JSON integer in the field's range that fits an int. */
static int json_int(const scn_field *f, const cJSON *v, int *out) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < INT_MIN || d > INT_MAX || !in_range(f, d)) return -1;
    *out = (int)d;
    return 0;
}

static int json_double(const scn_field *f, const cJSON *v, double *out) {
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || !in_range(f, v->valuedouble)) return -1;
    *out = v->valuedouble;
    return 0;
}

static int enum_index(const char *const *names, const char *s) {
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}

static int ident_ok(const char *s) {
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '+' || *s == '-'))
            return 0;
    return 1;
}

/* ---- set ------------------------------------------------------------------------------------------- */
static int set_value(scenario *s, char *base, const scn_field *f, const cJSON *v, const char *label,
                     moe_error *err);

static int set_string(char *dst, const scn_field *f, const cJSON *v, const char *file, const char *label,
                      moe_error *err) {
    if (f->type == SF_NSTRING && cJSON_IsNull(v)) { dst[0] = '\0'; return 0; }
    if (!cJSON_IsString(v)) return bad_json(err, file, label, v, f, NULL);
    const char *str = v->valuestring;
    size_t len = strlen(str);
    if (len >= f->size || ((f->flags & SCN_NONEMPTY) && len == 0) || ((f->flags & SCN_IDENT) && !ident_ok(str)))
        return bad_json(err, file, label, v, f, NULL);
    memcpy(dst, str, len + 1);
    return 0;
}

static int set_enum(char *dst, const scn_field *f, const cJSON *v, const char *file, const char *label,
                    moe_error *err) {
    int idx = cJSON_IsString(v) ? enum_index(f->names, v->valuestring) : -1;
    if (idx < 0) {
        char hint[96] = "";
        const char *dym = cJSON_IsString(v) ? moe_did_you_mean(v->valuestring, f->names) : NULL;
        if (dym) snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", dym);
        return bad_json(err, file, label, v, f, hint);
    }
    memcpy(dst, &idx, sizeof idx);
    return 0;
}

static int set_preset(scenario *s, char *dst, const scn_field *f, const cJSON *v, const char *label,
                      moe_error *err) {
    if (cJSON_IsNull(v)) {
        /* a model without a preset starts from nothing: the section must give every required field
         * (checked once the section is applied, preset_custom_model_check); a cluster keeps its
         * values and forgets where they came from */
        if (f->offset == offsetof(scenario, model.preset)) scn_model_preset_apply(s, "");
        dst[0] = '\0';
        return 0;
    }
    int rc = -1;
    if (cJSON_IsString(v)) {
        if (f->offset == offsetof(scenario, model.preset)) {
            /* the model and its own training recipe, where the scenario does not set it */
            rc = *v->valuestring ? scn_model_preset_apply(s, v->valuestring) : -1;
        } else {
            /* the cost model follows the cluster's GPU while it is the previous preset's default
             * (an H100 cluster is priced with the H100 model unless the scenario names another) */
            const char *old_default = preset_cluster_calibration(s->cluster.preset);
            rc = preset_cluster(v->valuestring, &s->cluster);
            const char *new_default = preset_cluster_calibration(v->valuestring);
            if (rc == 0 && old_default && new_default && strcmp(s->calibration, old_default) == 0)
                snprintf(s->calibration, sizeof s->calibration, "%s", new_default);
        }
    }
    if (rc != 0) {
        char hint[96] = "";
        const char *dym = cJSON_IsString(v) ? moe_did_you_mean(v->valuestring, f->names) : NULL;
        if (dym) snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", dym);
        return bad_json(err, s->file, label, v, f, hint);
    }
    return 0;
}

static int set_levels(char *dst, const scn_field *f, const cJSON *v, const char *file, const char *label,
                      moe_error *err) {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) return bad_json(err, file, label, v, f, NULL);
    int mask = 0, i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        int idx = cJSON_IsString(it) ? enum_index(scn_level_names, it->valuestring) : -1;
        if (idx < 0) {
            char item_label[300];
            snprintf(item_label, sizeof item_label, "%s[%d]", label, i);
            return bad_json(err, file, item_label, it, f, NULL);
        }
        mask |= 1 << idx;
        i++;
    }
    memcpy(dst, &mask, sizeof mask);
    return 0;
}

static int set_enum_set(char *dst, const scn_field *f, const cJSON *v, const char *file, const char *label,
                        moe_error *err) {
    if (!cJSON_IsArray(v)) return bad_json(err, file, label, v, f, NULL);
    int mask = 0, i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        int idx = cJSON_IsString(it) ? enum_index(f->names, it->valuestring) : -1;
        if (idx < 0 || (mask & (1 << idx))) {
            char item_label[300], hint[96] = "";
            snprintf(item_label, sizeof item_label, "%s[%d]", label, i);
            const char *dym = cJSON_IsString(it) && idx < 0 ? moe_did_you_mean(it->valuestring, f->names) : NULL;
            if (dym) snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", dym);
            else if (idx >= 0) snprintf(hint, sizeof hint, " (this one twice)");
            return bad_json(err, file, item_label, it, f, hint);
        }
        mask |= 1 << idx;
        i++;
    }
    memcpy(dst, &mask, sizeof mask);
    return 0;
}

static int set_int_list(char *base, const scn_field *f, const cJSON *v, const char *file, const char *label,
                        moe_error *err) {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > f->max_count) return bad_json(err, file, label, v, f, NULL);
    int n = 0, x;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        if (json_int(f, it, &x)) {
            char item_label[300];
            snprintf(item_label, sizeof item_label, "%s[%d]", label, n);
            return bad_json(err, file, item_label, it, f, NULL);
        }
        memcpy(base + f->offset + (size_t)n * f->size, &x, sizeof x);
        n++;
    }
    memcpy(base + f->count_offset, &n, sizeof n);
    return 0;
}

/* "all" or "slowest:K" (SCN_RANK_SELECT). */
static int set_rank_select(char *base, const scn_field *f, const cJSON *v, const char *file, const char *label,
                           moe_error *err) {
    int n, k = 0;
    char extra;
    const char *str = v->valuestring;
    if (strcmp(str, "all") == 0) n = SCN_TRACE_ALL;
    else if (sscanf(str, "slowest:%d%c", &k, &extra) == 1 && k >= 1 && k <= (1 << 20)) n = SCN_TRACE_SLOWEST;
    else return bad_json(err, file, label, v, f, NULL);
    memcpy(base + f->offset, &k, sizeof k);
    memcpy(base + f->count_offset, &n, sizeof n);
    return 0;
}

/* One element of an object list: every key known, every required key present. */
static int set_item(scenario *s, char *elem, const scn_field *f, const cJSON *obj, const char *label,
                    moe_error *err) {
    char key_label[360];
    if (!cJSON_IsObject(obj)) return bad_json(err, s->file, label, obj, f, NULL);
    const cJSON *m;
    cJSON_ArrayForEach(m, obj) {
        const scn_field *item = NULL;
        for (int k = 0; k < f->n_items && !item; k++)
            if (m->string && strcmp(m->string, f->items[k].path) == 0) item = &f->items[k];
        snprintf(key_label, sizeof key_label, "%s.%s", label, m->string ? m->string : "");
        if (!item) {
            const char *cand[8];
            for (int k = 0; k < f->n_items; k++) cand[k] = f->items[k].path;
            cand[f->n_items] = NULL;
            const char *dym = moe_did_you_mean(m->string ? m->string : "", cand);
            char keys[128], val[96], hint[64] = "";
            names_words(cand, keys, sizeof keys);
            snprintf(val, sizeof val, "unknown key \"%.60s\"", m->string ? m->string : "");
            if (dym) snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", dym);
            return moe_error_input(err, s->file, key_label, val, "one of %s%s", keys, hint);
        }
        if (set_value(s, elem, item, m, key_label, err)) return EXIT_BADINPUT;
    }
    for (int k = 0; k < f->n_items; k++)
        if ((f->items[k].flags & SCN_REQUIRED) && !cJSON_GetObjectItemCaseSensitive(obj, f->items[k].path)) {
            char exp[400];
            expect_words(&f->items[k], exp, sizeof exp);
            char val[128];
            json_shown(obj, val, sizeof val);
            return moe_error_input(err, s->file, label, val, "a \"%s\" key: %s", f->items[k].path, exp);
        }
    return 0;
}

static int set_obj_list(scenario *s, char *base, const scn_field *f, const cJSON *v, const char *label,
                        moe_error *err) {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > f->max_count) return bad_json(err, s->file, label, v, f, NULL);
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        char item_label[300];
        snprintf(item_label, sizeof item_label, "%s[%d]", label, n);
        char *elem = base + f->offset + (size_t)n * f->size;
        memset(elem, 0, f->size);
        for (int k = 0; k < f->n_items; k++)
            if (f->items[k].flags & SCN_ABSENT_NEG) *(int *)(elem + f->items[k].offset) = -1;
        if (set_item(s, elem, f, it, item_label, err)) return EXIT_BADINPUT;
        n++;
    }
    memcpy(base + f->count_offset, &n, sizeof n);
    return 0;
}

static int set_value(scenario *s, char *base, const scn_field *f, const cJSON *v, const char *label,
                     moe_error *err) {
    char *dst = base + f->offset;
    const char *file = s->file;
    switch (f->type) {
    case SF_INT: {
        int x;
        if (json_int(f, v, &x)) return bad_json(err, file, label, v, f, NULL);
        memcpy(dst, &x, sizeof x);
        return 0;
    }
    case SF_U64: {
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
            !in_range(f, v->valuedouble))
            return bad_json(err, file, label, v, f, NULL);
        uint64_t x = (uint64_t)v->valuedouble;
        memcpy(dst, &x, sizeof x);
        return 0;
    }
    case SF_DOUBLE: {
        double x;
        if (json_double(f, v, &x)) return bad_json(err, file, label, v, f, NULL);
        memcpy(dst, &x, sizeof x);
        return 0;
    }
    case SF_AUTO: {
        double x = -1;
        int is_auto = cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0;
        if (!is_auto && json_double(f, v, &x)) return bad_json(err, file, label, v, f, NULL);
        memcpy(dst, &x, sizeof x);
        return 0;
    }
    case SF_INT_AUTO: {
        int x = 0;
        int is_auto = cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0;
        if (!is_auto && json_int(f, v, &x)) return bad_json(err, file, label, v, f, NULL);
        memcpy(dst, &x, sizeof x);
        return 0;
    }
    case SF_BOOL: {
        if (!cJSON_IsBool(v)) return bad_json(err, file, label, v, f, NULL);
        int x = cJSON_IsTrue(v);
        memcpy(dst, &x, sizeof x);
        return 0;
    }
    case SF_STRING:
    case SF_NSTRING: return set_string(dst, f, v, file, label, err);
    case SF_ENUM: return set_enum(dst, f, v, file, label, err);
    case SF_LEVELS: return set_levels(dst, f, v, file, label, err);
    case SF_ENUM_SET: return set_enum_set(dst, f, v, file, label, err);
    case SF_INT_LIST:
        if ((f->flags & SCN_RANK_SELECT) && cJSON_IsString(v)) return set_rank_select(base, f, v, file, label, err);
        return set_int_list(base, f, v, file, label, err);
    case SF_OBJ_LIST: return set_obj_list(s, base, f, v, label, err);
    case SF_PRESET: return set_preset(s, dst, f, v, label, err);
    case SF_FORMAT:
        if (!cJSON_IsString(v) || strcmp(v->valuestring, SCN_FORMAT) != 0)
            return bad_json(err, file, label, v, f, " (the only version this moesim reads)");
        return 0;
    case SF_SWEEP: return moe_error_input(err, file, label, NULL, "a sweep only at the top of a scenario file");
    }
    return moe_error_input(err, file, label, NULL, "a known field type");
}

int scn_field_set(scenario *s, const scn_field *f, const cJSON *v, const char *label, moe_error *err) {
    int rc = set_value(s, (char *)s, f, v, label ? label : f->path, err);
    /* a field the scenario sets is its own: no preset or follower changes it afterwards */
    if (rc == 0) {
        mark_given(s, f);
        follow(s, f->offset);
    }
    return rc;
}

/* ---- check a stored value ------------------------------------------------------------------------- */
/* The expectation is worded only on failure: validation runs once per sweep point. */
static int check_fail(const scn_field *f, const char *file, const char *label, const char *val, moe_error *err) {
    char exp[400];
    expect_words(f, exp, sizeof exp);
    return moe_error_input(err, file, label, val, "%s", exp);
}

static int check_value(const char *base, const scn_field *f, const char *file, const char *label,
                       moe_error *err) {
    const char *src = base + f->offset;
    char val[128];
    switch (f->type) {
    case SF_INT: {
        int x;
        memcpy(&x, src, sizeof x);
        if (in_range(f, x) || ((f->flags & SCN_ABSENT_NEG) && x == -1)) return 0;
        snprintf(val, sizeof val, "%d", x);
        break;
    }
    case SF_INT_AUTO: {
        int x;
        memcpy(&x, src, sizeof x);
        if (x == 0 || in_range(f, x)) return 0;
        snprintf(val, sizeof val, "%d", x);
        break;
    }
    case SF_U64: {
        uint64_t x;
        memcpy(&x, src, sizeof x);
        if ((double)x <= f->max) return 0;
        snprintf(val, sizeof val, "%llu", (unsigned long long)x);
        break;
    }
    case SF_DOUBLE:
    case SF_AUTO: {
        double x;
        memcpy(&x, src, sizeof x);
        if (f->type == SF_AUTO && x < 0) return 0;
        if (isfinite(x) && in_range(f, x)) return 0;
        json_format_number(x, val, sizeof val);
        break;
    }
    case SF_BOOL: {
        int x;
        memcpy(&x, src, sizeof x);
        if (x == 0 || x == 1) return 0;
        snprintf(val, sizeof val, "%d", x);
        break;
    }
    case SF_STRING:
    case SF_NSTRING:
    case SF_PRESET: {
        const char *end = memchr(src, '\0', f->size);
        if (!end) return check_fail(f, file, label, "an unterminated string", err);
        int ok = 1;
        if (f->type == SF_STRING)
            ok = !((f->flags & SCN_NONEMPTY) && end == src) && !((f->flags & SCN_IDENT) && !ident_ok(src));
        if (f->type == SF_PRESET && *src) ok = enum_index(f->names, src) >= 0;
        if (ok) return 0;
        snprintf(val, sizeof val, "\"%.100s\"", src);
        break;
    }
    case SF_ENUM: {
        int x, n = 0;
        memcpy(&x, src, sizeof x);
        while (f->names[n]) n++;
        if (x >= 0 && x < n) return 0;
        snprintf(val, sizeof val, "enum value %d", x);
        break;
    }
    case SF_LEVELS: {
        int x;
        memcpy(&x, src, sizeof x);
        if (x > 0 && (x & ~(LEVEL_PLAN | LEVEL_STEP | LEVEL_RUN)) == 0) return 0;
        snprintf(val, sizeof val, "bitmask %d", x);
        break;
    }
    case SF_ENUM_SET: {
        int x, n = 0;
        memcpy(&x, src, sizeof x);
        while (f->names[n]) n++;
        if (x >= 0 && (x >> n) == 0) return 0;
        snprintf(val, sizeof val, "bitmask %d", x);
        break;
    }
    case SF_INT_LIST:
    case SF_OBJ_LIST: {
        int n;
        memcpy(&n, base + f->count_offset, sizeof n);
        if ((f->flags & SCN_RANK_SELECT) && (n == SCN_TRACE_ALL || n == SCN_TRACE_SLOWEST)) {
            int k;
            memcpy(&k, src, sizeof k);
            if (n == SCN_TRACE_ALL || k >= 1) return 0;
            snprintf(val, sizeof val, "\"slowest:%d\"", k);
            break;
        }
        if (n < 0 || n > f->max_count) {
            snprintf(val, sizeof val, "%d entries", n);
            break;
        }
        for (int i = 0; i < n; i++) {
            char item_label[300];
            const char *elem = src + (size_t)i * f->size;
            if (f->type == SF_INT_LIST) {
                int x;
                memcpy(&x, elem, sizeof x);
                if (in_range(f, x)) continue;
                snprintf(item_label, sizeof item_label, "%s[%d]", label, i);
                snprintf(val, sizeof val, "%d", x);
                return check_fail(f, file, item_label, val, err);
            }
            for (int k = 0; k < f->n_items; k++) {
                snprintf(item_label, sizeof item_label, "%s[%d].%s", label, i, f->items[k].path);
                if (check_value(elem, &f->items[k], file, item_label, err)) return EXIT_BADINPUT;
            }
        }
        return 0;
    }
    case SF_FORMAT:
    case SF_SWEEP: return 0;
    }
    return check_fail(f, file, label, val, err);
}

int scn_field_check(const scenario *s, const scn_field *f, moe_error *err) {
    return check_value((const char *)s, f, s->file, f->path, err);
}

/* ---- get ------------------------------------------------------------------------------------------- */
/* A numeric list item that holds 0 (SCN_OMIT_ZERO). */
static int item_is_zero(const char *elem, const scn_field *f) {
    double d;
    int i;
    switch (f->type) {
    case SF_DOUBLE: memcpy(&d, elem + f->offset, sizeof d); return d == 0.0;
    case SF_INT: memcpy(&i, elem + f->offset, sizeof i); return i == 0;
    default: return 0;
    }
}

/* An SF_INT list item below 0: absent (SCN_ABSENT_NEG). */
static int item_is_negative(const char *elem, const scn_field *f) {
    int i;
    if (f->type != SF_INT) return 0;
    memcpy(&i, elem + f->offset, sizeof i);
    return i < 0;
}

static cJSON *get_value(const char *base, const scn_field *f) {
    const char *src = base + f->offset;
    int i;
    double d;
    switch (f->type) {
    case SF_INT: memcpy(&i, src, sizeof i); return cJSON_CreateNumber(i);
    case SF_U64: {
        uint64_t x;
        memcpy(&x, src, sizeof x);
        return cJSON_CreateNumber((double)x);
    }
    case SF_DOUBLE: memcpy(&d, src, sizeof d); return cJSON_CreateNumber(d);
    case SF_AUTO: memcpy(&d, src, sizeof d); return d < 0 ? cJSON_CreateString("auto") : cJSON_CreateNumber(d);
    case SF_INT_AUTO: memcpy(&i, src, sizeof i); return i == 0 ? cJSON_CreateString("auto") : cJSON_CreateNumber(i);
    case SF_BOOL: memcpy(&i, src, sizeof i); return cJSON_CreateBool(i);
    case SF_STRING: return cJSON_CreateString(src);
    case SF_NSTRING:
    case SF_PRESET: return *src ? cJSON_CreateString(src) : cJSON_CreateNull();
    case SF_ENUM: {
        int n = 0;
        memcpy(&i, src, sizeof i);
        while (f->names[n]) n++;
        return (i >= 0 && i < n) ? cJSON_CreateString(f->names[i]) : cJSON_CreateNull();
    }
    case SF_LEVELS: {
        cJSON *a = cJSON_CreateArray();
        memcpy(&i, src, sizeof i);
        for (int b = 0; scn_level_names[b]; b++)
            if (i & (1 << b)) cJSON_AddItemToArray(a, cJSON_CreateString(scn_level_names[b]));
        return a;
    }
    case SF_ENUM_SET: {
        cJSON *a = cJSON_CreateArray();
        memcpy(&i, src, sizeof i);
        for (int b = 0; f->names[b]; b++)
            if (i & (1 << b)) cJSON_AddItemToArray(a, cJSON_CreateString(f->names[b]));
        return a;
    }
    case SF_INT_LIST:
    case SF_OBJ_LIST: {
        int n;
        memcpy(&n, base + f->count_offset, sizeof n);
        if ((f->flags & SCN_RANK_SELECT) && n == SCN_TRACE_ALL) return cJSON_CreateString("all");
        if ((f->flags & SCN_RANK_SELECT) && n == SCN_TRACE_SLOWEST) {
            char sel[32];
            memcpy(&i, src, sizeof i);
            snprintf(sel, sizeof sel, "slowest:%d", i);
            return cJSON_CreateString(sel);
        }
        cJSON *a = cJSON_CreateArray();
        for (int k = 0; k < n && k < f->max_count; k++) {
            const char *elem = src + (size_t)k * f->size;
            if (f->type == SF_INT_LIST) {
                memcpy(&i, elem, sizeof i);
                cJSON_AddItemToArray(a, cJSON_CreateNumber(i));
                continue;
            }
            cJSON *o = cJSON_CreateObject();
            for (int m = 0; m < f->n_items; m++) {
                if ((f->items[m].flags & SCN_OMIT_ZERO) && item_is_zero(elem, &f->items[m])) continue;
                if ((f->items[m].flags & SCN_ABSENT_NEG) && item_is_negative(elem, &f->items[m])) continue;
                cJSON_AddItemToObject(o, f->items[m].path, get_value(elem, &f->items[m]));
            }
            cJSON_AddItemToArray(a, o);
        }
        return a;
    }
    case SF_FORMAT: return cJSON_CreateString(SCN_FORMAT);
    case SF_SWEEP: return NULL;
    }
    return NULL;
}

cJSON *scn_field_get(const scenario *s, const scn_field *f) { return get_value((const char *)s, f); }

int scn_field_same(const scenario *a, const scenario *b, const scn_field *f) {
    const char *x = (const char *)a + f->offset, *y = (const char *)b + f->offset;
    switch (f->type) {
    case SF_INT: case SF_INT_AUTO: case SF_BOOL: case SF_ENUM: case SF_LEVELS: case SF_ENUM_SET:
        return memcmp(x, y, sizeof(int)) == 0;
    case SF_U64: case SF_DOUBLE: case SF_AUTO: return memcmp(x, y, sizeof(double)) == 0;
    case SF_STRING: case SF_NSTRING: case SF_PRESET: return strcmp(x, y) == 0;
    case SF_INT_LIST:
    case SF_OBJ_LIST: {
        int na, nb;
        memcpy(&na, (const char *)a + f->count_offset, sizeof na);
        memcpy(&nb, (const char *)b + f->count_offset, sizeof nb);
        if (na != nb) return 0;
        if (na > f->max_count) na = f->max_count;
        return na <= 0 || memcmp(x, y, (size_t)na * f->size) == 0;
    }
    case SF_FORMAT: case SF_SWEEP: return 1;
    }
    return 0;
}

/* ---- apply a JSON object ---------------------------------------------------------------------------- */
static int join_path(const char *prefix, const char *key, char *out, size_t cap) {
    int n = *prefix ? snprintf(out, cap, "%s.%s", prefix, key) : snprintf(out, cap, "%s", key);
    return n >= 0 && (size_t)n < cap;
}

static int unknown_field(const scenario *s, const char *prefix, const char *key, const char *path,
                         moe_error *err) {
    char val[96], label[160];
    char quoted[80];
    json_truncate_into(key, quoted, sizeof quoted);
    snprintf(val, sizeof val, "unknown field \"%s\"", quoted);
    json_truncate_into(path, label, sizeof label);
    const char *where = *prefix ? prefix : "the top level";
    if (strchr(key, '.') && (scn_field_find(path) || scn_path_is_section(path)))
        return moe_error_input(err, s->file, label, val,
                               "nested objects ({\"a\": {\"b\": ...}} for \"a.b\"); dotted keys are "
                               "only for \"sweep\"");
    const char *dym = *key ? scn_field_suggest(prefix, key) : NULL;
    if (dym) return moe_error_input(err, s->file, label, val, "a field of %s (did you mean \"%s\"?)", where, dym);
    char names[MAX_CANDIDATES][NAME_LEN], list[600];
    int n = section_children(prefix, names, MAX_CANDIDATES);
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < n && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
    return moe_error_input(err, s->file, label, val, "a field of %s: %s", where, list);
}

int scn_apply_object(scenario *s, const char *prefix, const cJSON *obj, int skip_preset, moe_error *err) {
    char path[256];
    /* duplicate keys: refused by the parser (json_parse_strict) */
    /* Pass 0 applies the section's preset, pass 1 everything else: a preset never undoes a field
     * given beside it, whatever the order of the keys in the file. A model section with
     * "preset": null must then have given every field a model needs. */
    if (strcmp(prefix, "model") == 0 && !skip_preset && !cJSON_GetObjectItemCaseSensitive(obj, "preset")) {
        /* a model section without "preset" is a model given field by field, as with "preset": null */
        scn_model_preset_apply(s, "");
        mark_given(s, scn_field_find("model.preset"));
    }
    for (int pass = 0; pass < 2; pass++) {
        for (const cJSON *m = obj->child; m; m = m->next) {
            const char *key = m->string ? m->string : "";
            int plain = *key && !strchr(key, '.') && join_path(prefix, key, path, sizeof path);
            const scn_field *f = plain ? scn_field_find(path) : NULL;
            int is_preset = f && f->type == SF_PRESET;
            if (pass == 0) {
                if (is_preset && !skip_preset && scn_field_set(s, f, m, path, err)) return EXIT_BADINPUT;
                continue;
            }
            if (is_preset || (f && f->type == SF_SWEEP)) continue; /* done in pass 0 / by sweep.c */
            if (f) {
                if (scn_field_set(s, f, m, path, err)) return EXIT_BADINPUT;
            } else if (plain && scn_path_is_section(path)) {
                if (!cJSON_IsObject(m)) {
                    char val[128];
                    json_shown(m, val, sizeof val);
                    return moe_error_input(err, s->file, path, val, "an object (the \"%s\" section)", path);
                }
                if (scn_apply_object(s, path, m, 0, err)) return EXIT_BADINPUT;
            } else {
                /* the label is truncated in the message; a 10,000-character key is still named */
                char shown[160];
                json_truncate_into(key, shown, sizeof shown);
                snprintf(path, sizeof path, "%.80s%s%s", prefix, *prefix ? "." : "", shown);
                return unknown_field(s, prefix, key, path, err);
            }
        }
    }
    /* a model without a preset (its section has none or null; a sweep that sets model.preset to null
     * re-applies the file's model section with skip_preset) */
    if (strcmp(prefix, "model") == 0 && s->model.preset[0] == '\0')
        return preset_custom_model_check(&s->model, obj, s->file, err);
    return 0;
}
