/* scenario_types.h — the resolved scenario (SCENARIO.md, format "moesim-scenario/1").
 *
 * A scenario file is parsed into one `scenario` value: presets are applied first, then the fields
 * the file gives override them. A sweep expands one parsed scenario into points, each of them again a
 * complete `scenario`. Every consumer (plan, step, run, live) reads only this struct, never JSON.
 *
 * Units are in the field names (SI inside the code: seconds and bytes unless the name says otherwise,
 * and the names mirror the JSON keys so that a dotted path like "cluster.nic_gbps" reads the same here).
 *
 * The types and the inline rules that read them: what every file of the scenario folder includes.
 * Validating, setting and printing a scenario is scenario.h's (scenario.c), which includes this
 * header for everyone outside the folder; reading a scenario file is scenario_load.h's. */
#ifndef MOESIM_SCENARIO_TYPES_H
#define MOESIM_SCENARIO_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SCN_NAME_MAX 64
#define SCN_PATH_MAX 512
#define SCN_MAX_FIELDS 512 /* rows of the field table (scenario_fields.c asserts it) */
#define SCN_MAX_FAULTS 16
#define SCN_MAX_TRACE_RANKS 64
#define SCN_TRACE_ALL (-1)       /* output.trace_ranks "all" */
#define SCN_TRACE_SLOWEST (-2)   /* output.trace_ranks "slowest:K" */
#define SCN_MAX_SWEEP_DIMS 16

/* ---- model ------------------------------------------------------------------------------------ */
typedef enum { ATTN_MHA = 0, ATTN_GQA, ATTN_MLA } attention_kind;
typedef enum { FFN_SWIGLU = 0, FFN_GELU } ffn_kind;   /* SwiGLU has 3 matrices, GeLU 2 */

typedef struct {
    char preset[SCN_NAME_MAX];
    int layers;          /* transformer blocks (not counting embedding/head) */
    int dense_layers;    /* the first `dense_layers` blocks have a dense FFN; the rest are MoE */
    int hidden;
    int heads;
    int head_dim;        /* per-head dim of q/k (MHA/GQA), of the no-rope part for MLA */
    int kv_heads;        /* GQA: key/value heads (MHA: == heads); unused for MLA */
    /* MLA (DeepSeek-V2/V3): low-rank q and kv compression, decoupled rope dims */
    int q_lora_rank;     /* 0 = no q compression */
    int kv_lora_rank;
    int rope_head_dim;
    int v_head_dim;
    int ffn_hidden;      /* dense FFN intermediate size */
    ffn_kind ffn_act;
    int experts;         /* routed experts per MoE layer; 0 = dense model */
    int shared_experts;
    int expert_hidden;   /* intermediate size of one routed (and shared) expert */
    int top_k;
    int expert_groups;   /* group-limited routing: experts split into groups (DeepSeek-V3: 8) */
    int topk_groups;     /* groups selected per token (DeepSeek-V3: 4); 0 = off */
    int vocab;
    int seq_len;
    attention_kind attention;
    int tie_embeddings;  /* bool */
    double published_active_params; /* model card's headline active count (6N estimate); 0 = none */
    int mtp_layers;      /* multi-token-prediction modules after the last block (DeepSeek-V3: 1) */
    /* Sliding-window attention (gpt-oss: window 128 on every other layer): a windowed layer's query
     * attends to at most `sliding_window` preceding keys. 0 = every layer attends to the whole
     * sequence. global_attention_every k > 0: blocks k-1, 2k-1, ... keep full attention and the
     * others use the window (gpt-oss: 2); 0: every block is windowed. */
    int sliding_window;
    int global_attention_every;
} model_cfg;

/* ---- cluster ---------------------------------------------------------------------------------- */
typedef struct {
    char name[SCN_NAME_MAX];
    double bf16_tflops;  /* dense peak */
    double fp8_tflops;
    double hbm_GBps;
    double mem_GiB;
    double fp4_tflops;   /* dense FP4 peak (Blackwell); 0 = no FP4 / block-scaled tensor cores */
    double sustained;    /* tensor-core rate sustained on back-to-back GEMMs / the burst rate the
                            published tables give; <= 0: "auto" = the cost model's (costmodel.h) */
    double grouped_gemm_rate; /* the routed experts' grouped GEMMs' rate against the model's GEMM
                            tables; <= 0: "auto" = the joint fit's for the architecture, else 1 */
    double speed_cv;     /* coefficient of variation of the GPUs' persistent compute speed (each GPU's
                            factor drawn from the seed: sim/program/faults.h); 0 = identical GPUs */
} gpu_cfg;

typedef struct {
    double nvlink;       /* one NVLink/NVSwitch hop */
    double same_leaf;    /* GPU -> NIC -> leaf -> NIC -> GPU, same rail and leaf */
    double cross_leaf;   /* through a spine */
    double cross_pod;    /* through the core between pods (cluster.pod_nodes) */
} latency_us_cfg;

/* NCCL's collectives (sim/plan/ring_split.h): its tuning model's latency and ring/tree choice, or
 * rings paying only their wires' latency per step */
typedef enum { NCCL_MODEL_TUNED = 0, NCCL_MODEL_WIRE } nccl_model_kind;

/* How the RDMA transport recovers a lost packet: go-back-N (InfiniBand RC and RoCE NICs by default:
 * the receiver drops what follows a gap and the sender resends from it) or selective retransmission
 * (only the lost packet is resent). */
typedef enum { RETX_GO_BACK_N = 0, RETX_SELECTIVE } retx_kind;

/* How a leaf spreads its cross-leaf traffic over the ports of its uplink bundle to the rail's spines
 * (platforms/fabric_geometry.h): adaptive routing / packet spraying uses every port evenly (the bundle
 * is one link); static ECMP hashes each queue pair onto one port for its whole life. */
typedef enum { PATH_ADAPTIVE = 0, PATH_ECMP } path_selection_kind;

/* The fabric's transport: RoCEv2 over Ethernet (lossy, or lossless on one PFC priority) or InfiniBand
 * (credit-based link-level flow control: always lossless) */
typedef enum { TRANSPORT_ROCE = 0, TRANSPORT_IB } transport_kind;
/* The head-of-queue lifetime of a switch port that drives an end node, as NVIDIA's subnet manager sets
 * it: leaf_head_of_queue_lifetime 0x10, 4.096 us x 2^16 (UFM Subnet Manager default properties; the
 * IBA Vol. 1 HOQ lifetime): a packet that waits longer at the head of its queue is discarded */
#define IB_LEAF_HOQ_LIFETIME_MS 268.435456

typedef struct {
    char preset[SCN_NAME_MAX];
    int nodes;
    int gpus_per_node;
    gpu_cfg gpu;
    double nvlink_GBps;      /* achievable per GPU per direction */
    double nic_gbps;         /* per NIC, one NIC per GPU (line rate, Gbit/s) */
    int rails;               /* == gpus_per_node for a rail-optimized fabric */
    int leaf_down_ports;     /* nodes (NICs) under one leaf switch per rail */
    double oversubscription; /* leaf downlink : uplink bandwidth ratio (1.0 = non-blocking) */
    latency_us_cfg latency_us;
    double storage_GBps;     /* aggregate parallel-file-system write bandwidth */
    double host_mem_GiB;
    double pcie_GBps;        /* GPU <-> host, per GPU per direction */
    /* GPUs of one NVLink domain (consecutive GPU ids): 0 = "auto" = gpus_per_node; NVL72 racks: 72
     * (or the 64 of them a job uses) over trays of gpus_per_node GPUs, each with its NICs on the rails */
    int nvlink_domain_gpus;
    transport_kind transport; /* roce or infiniband; infiniband is lossless: pfc follows it */
    int pfc;                 /* bool: the fabric is lossless (PFC on RoCE, credits on InfiniBand): an
                                incast pauses the ports upstream of it and stalls every flow behind them
                                (sim/exec/pfc_spread.h) */
    double stall_discard_ms; /* on a lossless fabric: a switch port that has not sent for this long
                                discards its queue (InfiniBand's head-of-queue lifetime, a RoCE switch's
                                PFC watchdog); 0 = never */
    int nccl_ib_timeout;     /* NCCL_IB_TIMEOUT: a queue pair's ACK timeout is 4.096 us x 2^this */
    int nccl_ib_retry_cnt;   /* NCCL_IB_RETRY_CNT: retries before a queue pair fails */
    int ecn;                 /* bool: ECN marking with rate control at the senders (DCQCN): a congested
                                egress slows its own senders before its queue reaches the pause
                                threshold, so its pause does not spread (sim/exec/pfc_spread.h) */
    nccl_model_kind nccl_model; /* what NCCL's collectives pay beyond their bytes (sim/plan/ring_split.h) */
    retx_kind retransmission;   /* how the NICs recover a lost packet (sim/scenario/link_loss.h) */
    path_selection_kind path_selection; /* uplink port per flow: adaptive (all ports) or ecmp (hashed) */
    int qps_per_connection;     /* queue pairs per GPU pair, each hashed onto its own port under ecmp
                                   (NCCL_IB_QPS_PER_CONNECTION); < 1 reads as 1 */
    /* A third switch tier: nodes of one pod (whole leaves, consecutive node ids), whose rail spines
     * reach the other pods' through the core; 0 = "auto" = one pod, the two-tier fabric */
    int pod_nodes;
    double pod_oversubscription; /* a pod's spine downlink : core uplink bandwidth per rail (1 = non-blocking) */
} cluster_cfg;

/* ---- layout ----------------------------------------------------------------------------------- */
typedef enum { SCHED_1F1B = 0, SCHED_INTERLEAVED, SCHED_DUALPIPE } schedule_kind;
typedef enum { RECOMPUTE_NONE = 0, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL } recompute_kind;
typedef enum { PLACE_EP_INNER = 0, PLACE_DP_INNER } placement_kind;
/* Context parallelism's key/value exchange: ring attention (one P2P step per ring position,
 * overlapped with the attention chunks) or one all-gather of the keys and values (Megatron's
 * cp_comm_type "p2p" / "all_gather"). */
typedef enum { CP_COMM_P2P = 0, CP_COMM_ALL_GATHER } cp_comm_kind;

/* MoE parallel folding (Megatron): the GPUs of a pipeline stage are folded two ways.
 *   attention side: tp x cp x (attention DP) per stage;  expert side: etp x ep x dp per stage,
 * so etp*ep*dp*pp == GPU count and attention DP = GPUs / (tp*cp*pp). etp = 0 ("auto") is tp: the
 * experts use the attention's tensor parallelism (every TP rank routes the micro-batch its group
 * gathered); a smaller etp routes each rank's own sequence-parallel tokens (scn_routed_tokens). */
typedef struct {
    int tp, pp, ep, dp;   /* attention TP, pipeline, expert parallelism, expert replicas beyond EP */
    int zero;             /* 0..3 */
    int micro_batch;      /* sequences per micro-batch per attention-DP rank */
    int global_batch;     /* sequences per optimizer step */
    schedule_kind schedule;
    int vpp;              /* virtual pipeline chunks per rank (interleaved) */
    recompute_kind recompute;
    placement_kind placement;
    /* which blocks each model stage holds (sim/scenario/pipeline_layout.h): Megatron's layout string
     * ("" = the even split), or the first / last pipeline rank's block counts (0 = "auto") */
    char pipeline_layout[SCN_PATH_MAX];
    int first_stage_layers, last_stage_layers;
    int etp;              /* expert tensor parallelism; 0 = "auto" = tp */
    int cp;               /* context parallelism (each sequence split over cp ranks); 0 counts as 1 */
    cp_comm_kind cp_comm;
    int moe_a2a_overlap;  /* bool: 1F1B / interleaved pair a forward with a backward and overlap their
                             all-to-alls with each other's compute (Megatron overlap_moe_expert_parallel_comm) */
    unsigned recompute_modules; /* bit i: scn_recompute_module_names[i] (RCM_*); 0 = layout.recompute */
    int overlap_grad_reduce; /* bool: ZeRO 0/1 reduce the gradients bucket by bucket under the last
                                backward and gather the parameters under the first forward (Megatron
                                overlap_grad_reduce + overlap_param_gather); 0 = one tail collective */
} layout_cfg;

/* Megatron's recompute_modules, bit i of layout.recompute_modules = scn_recompute_module_names[i] */
enum {
    RCM_CORE_ATTN = 1, RCM_MLA_UP_PROJ = 2, RCM_LAYERNORM = 4, RCM_MLP = 8, RCM_MOE_ACT = 16, RCM_MOE = 32,
    RCM_SHARED_EXPERTS = 64
};

/* ---- routing ---------------------------------------------------------------------------------- */
/* balanced: Megatron's forced load balance (moe_router_force_load_balancing), made exact: every
 * expert receives exactly its share T*K/E of the token-expert pairs (sim/program/routing.h). */
typedef enum { ROUTE_UNIFORM = 0, ROUTE_ZIPF, ROUTE_HOT, ROUTE_TRACE, ROUTE_BALANCED } route_kind;
/* The MoE token dispatcher (Megatron's moe_token_dispatcher_type): deepep, Megatron's "flex" with the
 * DeepEP backend, and hybridep, "flex" with the HybridEP backend, send a token once per destination rank
 * and once per destination node over RDMA (then fan it out over NVLink); alltoall, Megatron's MoEAlltoAllTokenDispatcher, permutes
 * the tokens by expert and moves every token-expert pair on its own through an NCCL all-to-all. */
typedef enum { DISPATCH_DEEPEP = 0, DISPATCH_ALLTOALL, DISPATCH_HYBRIDEP } dispatcher_kind;
/* Does the dispatcher send a token once per destination rank and node (DeepEP and HybridEP move the
 * same bytes; they differ in their kernels and host work, sim/plan/host_costs.h)? */
static inline int dispatcher_dedups(dispatcher_kind d) { return d != DISPATCH_ALLTOALL; }
/* Which routing sample an EP group's (MoE layer, micro-batch) takes (sim/program/program.h "Routing"):
 * every replica's EP groups their own (independent), or all of them replica 0's (shared). */
typedef enum { GROUP_SAMPLES_INDEPENDENT = 0, GROUP_SAMPLES_SHARED } group_samples_kind;

/* routing.steps > 1: how the routing law drifts from step to step (sim/program/routing_drift.h) */
typedef struct {
    double walk_sigma;        /* logit per step: std of each expert's log-popularity step */
    double walk_reversion;    /* per step: AR(1) pull of the log-popularity back to 0 */
    int hot_onset_step;       /* the step routing.hot_expert turns hot */
    double hot_peak_share;    /* its share of the tokens then (0: none) */
    double hot_decay_steps;   /* e-folding time of that share, steps */
    int hot_rise_steps;       /* steps its share takes to grow to the peak (0: at once) */
    double bias_update_speed; /* DeepSeek-V3's gamma, logit per step */
} routing_drift_cfg;

typedef struct {
    route_kind distribution;
    double zipf_s;
    int hot_expert;
    double hot_share;
    int node_limit;          /* max nodes a token's top-k may span; 0 = unlimited */
    double capacity_factor;  /* <= 0: no cap */
    int drop;                /* bool: drop tokens over capacity (else dropless) */
    char trace[SCN_PATH_MAX];/* per-expert token counts (distribution "trace"); relative path, see `file` */
    dispatcher_kind dispatcher;
    int redundant_experts;   /* extra expert slots per EP group holding replicas of hot experts (EPLB) */
    int eplb_interval_steps; /* 0: the oracle placement every step; K: EPLB from the loads measured over the
                                last K steps, every K steps, the moves paid (sim/program/eplb.h) */
    group_samples_kind group_samples;
    int steps;               /* consecutive steps simulated at the step level (1: one step) */
    routing_drift_cfg drift;
} routing_cfg;

/* ---- precision -------------------------------------------------------------------------------- */
/* Element types. The first four are storage types (any precision field); the others are compute
 * recipes only (precision.compute): DT_FP8 is DeepSeek-V3's blockwise FP8 (1x128 activation tiles,
 * 128x128 weight blocks), DT_FP8_CS FP8 with one current scale per tensor, DT_MXFP8 OCP MX FP8 (E4M3
 * with one E8M0 scale per 32 elements, Blackwell), DT_NVFP4 NVIDIA's FP4 (E2M1 with an E4M3 scale per
 * 16 elements and an FP32 tensor scale, Blackwell), DT_FP8_DS FP8 with one scale per tensor from an
 * amax history (delayed scaling). Their GEMM rates and quantization passes are sim/plan/recipes.h's,
 * priced by the cost model (sim/plan/costmodel.h). */
typedef enum { DT_FP8 = 0, DT_BF16, DT_FP16, DT_FP32, DT_FP8_CS, DT_MXFP8, DT_NVFP4, DT_FP8_DS, DT_NKINDS } dtype_kind;
typedef struct {
    dtype_kind compute, dispatch, combine, master;
    int quantization_free;   /* bool: the recipe's quantize passes cost no GPU time (what-if, ablation) */
} precision_cfg;

/* ---- reliability ------------------------------------------------------------------------------ */
typedef enum { DIST_EXPONENTIAL = 0, DIST_WEIBULL } failure_dist_kind;
typedef enum { CKPT_FIXED = 0, CKPT_YOUNG, CKPT_DALY, CKPT_NONE } ckpt_policy_kind;
typedef enum { CKPT_SYNC = 0, CKPT_ASYNC } ckpt_mode_kind;
typedef enum { SPIKE_ROLLBACK = 0, SPIKE_SKIP, SPIKE_DEFEND } spike_action_kind;

/* Failure classes: rates split the GPU MTBF total unless the scenario sets them (SCENARIO.md). */
typedef enum {
    FAIL_GPU = 0, FAIL_HBM, FAIL_NIC, FAIL_NVLINK, FAIL_SWITCH, FAIL_HOST, FAIL_SOFTWARE,
    FAIL_NCLASSES
} failure_class;

typedef struct {
    double share;            /* fraction of all failures of this class (classes sum to 1) */
    int needs_node_swap;     /* bool: the node must be replaced (else: restart in place) */
} failure_class_cfg;

/* Checkpoint tiers (sim/plan/checkpoint_write.h): where the copies of a checkpoint live. The
 * snapshot in host memory is always the first; peer host memory (over the training rails) and local
 * NVMe are optional; the parallel file system takes every pfs_every-th checkpoint. All zero: off
 * (a failure rolls back to the last checkpoint on the file system, restores are in the recovery
 * times). */
typedef struct {
    int enabled;              /* restores read from the fastest surviving tier */
    int host_survives_restart;/* the host snapshot outlives a restart in place (kept by a daemon) */
    int peer;                 /* replicate each snapshot to a peer node's host memory */
    double peer_GBps;         /* per node, replication; < 0: "auto" = one NIC */
    double peer_read_GBps;    /* per node, restore from the peer; < 0: "auto" = all the node's NICs */
    double peer_step_slowdown;/* step-time factor while replicating; < 0: "auto" (checkpoint_write.h) */
    int peer_offset_nodes;    /* node n's peer is n + offset (mod nodes); 0: "auto" = one rack over */
    int nvme;                 /* write each snapshot to the node's local NVMe */
    double nvme_write_GBps, nvme_read_GBps;   /* per node */
    int pfs_every;            /* every n-th checkpoint goes to the file system (the last one always) */
    double pfs_read_GBps;     /* aggregate; < 0: "auto" = cluster.storage_GBps */
} ckpt_tiers_cfg;

typedef struct {
    ckpt_policy_kind policy;
    double interval_min;     /* used by "fixed" */
    ckpt_mode_kind mode;
    double state_bytes;      /* < 0: "auto" (from the plan's ledgers) */
    double snapshot_GBps;    /* GPU -> host snapshot bandwidth per GPU (async pause) */
    double write_min;        /* < 0: "auto" = state_bytes / storage bandwidth; else the write time */
    ckpt_tiers_cfg tiers;
} checkpoint_cfg;

typedef struct {
    double hot_spare_fraction;
    double spare_swap_s;
    double full_restart_min;
    double repair_h;
    int repair_slots;        /* repairs that can run at once (technicians, RMA desk); 0 = unlimited */
} recovery_cfg;

/* Failure models: "classes" splits one per-GPU MTBF over failure classes (one renewal process per
 * class for the whole job); "components" gives every component kind of the cluster its own count,
 * per-unit MTBF, Weibull shape and blast radius (sim/scenario/components.h). */
typedef enum { FMODEL_CLASSES = 0, FMODEL_COMPONENTS } failure_model_kind;

/* Component kinds of the "components" failure model (names: component_kind_name). */
typedef enum {
    COMP_GPU = 0, COMP_NIC, COMP_HOST, COMP_LEAF_SWITCH, COMP_SPINE_SWITCH, COMP_RACK, COMP_SOFTWARE,
    COMP_NKINDS
} component_kind;

typedef struct {
    double count;            /* units in the job; < 0: "auto" (from the cluster, components.h) */
    double mtbf_h;           /* mean time between failures of one unit; 0 = never fails */
    double weibull_shape;    /* per-unit lifetime shape; 1 = exponential */
    double detect_s;         /* from the failure to its detection: the job hangs meanwhile */
    double repair_h;         /* repair or RMA of one failed unit; < 0: "auto" = recovery.repair_h */
} component_cfg;

typedef struct {
    double probability;      /* a failure that takes nodes down brings a second one in their rack */
    double delay_s;          /* mean delay of that second failure (exponential) */
} correlated_cfg;

typedef struct {
    double fraction;         /* fraction of nodes that turn slow at some time during the run */
    double slowdown;         /* step-time factor while a straggler is in the job */
    double detect_min;       /* time to detect and replace a straggler */
} stragglers_cfg;

/* Loss spikes (seed 000 §3.2): batches that would spike arrive per_day; "rollback" rolls every one
 * back, "skip" discards every one, "defend" runs the defences (sim/run/trainrun.c): the activation-
 * norm monitor, gradient clipping, and the rollback when both let it through. */
typedef struct {
    double per_day;
    spike_action_kind action;
    int monitor;                 /* activation-norm monitor on */
    double monitor_threshold;    /* skip a batch whose norm exceeds this x its window mean */
    int monitor_window_steps;    /* the window; the monitor is armed that many steps after a start */
    double norm_ratio_median;    /* a spiking batch's activation norm over the healthy mean: lognormal */
    double norm_ratio_sigma;
    int clipping;                /* gradient clipping on */
    double clip_fraction;        /* share of (finite) gradient spikes clipping tames */
    double fp16_overflow_fraction;/* FP16 compute: share of spiking batches that overflow to Inf */
} loss_spikes_cfg;

typedef struct {
    failure_model_kind failure_model;
    double gpu_mtbf_h;
    failure_dist_kind distribution;
    double weibull_shape;
    char failure_trace[SCN_PATH_MAX];   /* "" = draw failures; relative path, see scenario.file */
    failure_class_cfg classes[FAIL_NCLASSES];
    component_cfg components[COMP_NKINDS];
    int rack_nodes;          /* nodes per rack / power domain (components.rack's blast radius) */
    correlated_cfg correlated;
    checkpoint_cfg checkpoint;
    recovery_cfg recovery;
    stragglers_cfg stragglers;
    loss_spikes_cfg loss_spikes;
} reliability_cfg;

/* ---- in-step faults (step level) ---------------------------------------------------------------- */
/* LINK_UPLINK: a leaf switch's uplink to its rail's spine layer (the fabric's link up-rR-lL,
 * platforms/fabric_geometry.h), addressed by rail and leaf instead of a GPU. */
typedef enum { LINK_NIC = 0, LINK_NVLINK, LINK_UPLINK } link_kind;
typedef struct { int gpu; double factor; } slow_gpu_fault;           /* compute takes factor x longer */
/* bandwidth x factor (0<f<=1), and x the goodput of its retransmission scheme when it drops
 * loss_rate of its packets (0 <= loss_rate < 1; NIC and uplink links only: sim/scenario/link_loss.h).
 * nic, nvlink: `gpu` names the link (rail, leaf: -1). uplink: `rail` and `leaf` name it (gpu: -1). */
typedef struct { int gpu; link_kind kind; double factor; double loss_rate; int rail; int leaf; } link_fault;

/* A stalled rank (seed 000 §3.1 NCCL hang): the rank on `gpu` stops before the forward of MoE/attention
 * block `layer` for `micro_batch` and never arrives at its next collective; everyone else waits. */
typedef struct { int gpu; int layer; int micro_batch; } stall_fault;

typedef struct {
    int n_slow_gpus;
    slow_gpu_fault slow_gpus[SCN_MAX_FAULTS];
    int n_links;
    link_fault links[SCN_MAX_FAULTS];
    int n_stalls;
    stall_fault stalls[SCN_MAX_FAULTS];
    /* NCCL's watchdog: a rank that waits longer than this inside one collective fails the step, and
     * the run level counts it as a failure detected after this delay (0 = no timeout: a hang hangs) */
    double collective_timeout_s;
} faults_cfg;

/* faults_link_factor, the bandwidth factor of one GPU's NIC or NVLink under faults.links (degraded
 * and lossy links), is in sim/scenario/link_loss.h: a lossy link's goodput needs the cluster's line
 * rate and latency. */

/* ---- run, output -------------------------------------------------------------------------------- */
/* run.tokens for a model that publishes no training-token count and a scenario that sets none: the
 * reference design's DeepSeek-V3 run (seed 003: 15T tokens). The run level warns when it uses it
 * (point_warnings.h). */
#define SCN_ASSUMED_RUN_TOKENS 15e12

/* run.step_sequence: replay the step level's series in order, cycled (sim/run/step_clock.h), or its
 * completed steps' mean with Poisson timeouts */
typedef enum { RUN_STEPS_CYCLE = 0, RUN_STEPS_MEAN } run_step_sequence_kind;
typedef struct {
    double tokens;
    double max_days;
    int trials;
    double assumed_mfu;  /* > 0: the plan's pure_compute_days uses this MFU (seed 003: 0.52) */
    run_step_sequence_kind step_sequence;   /* routing.steps > 1: how the run takes the step series */
} run_cfg;

enum { LEVEL_PLAN = 1, LEVEL_STEP = 2, LEVEL_RUN = 4 };
typedef enum { FIDELITY_FAST = 0, FIDELITY_FULL } fidelity_kind;

typedef struct {
    char dir[SCN_PATH_MAX];
    int trace;           /* bool: write trace.json (Perfetto) for step */
    int plots;           /* bool */
    int levels;          /* LEVEL_* bitmask */
    /* which ranks get tracks in trace.json: n_trace_ranks >= 0: trace_ranks[0..n) (0 = a default
     * subset); SCN_TRACE_ALL: every rank; SCN_TRACE_SLOWEST: the trace_ranks[0] slowest ranks */
    int n_trace_ranks;
    int trace_ranks[SCN_MAX_TRACE_RANKS];
} output_cfg;

/* How the MoE all-to-all moves its bytes (step level): DeepEP's two-level aggregation (one RDMA
 * copy per destination node on the sender's rail, then NVLink) or NCCL's all_to_all (one transfer
 * per rank pair, cross-rail ones through PXN). */
typedef enum { A2A_IMPL_DEEPEP = 0, A2A_IMPL_NCCL } a2a_impl_kind;

typedef struct {
    fidelity_kind fidelity;
    a2a_impl_kind a2a;
} step_cfg;

/* The host side of a step (sim/plan/host_costs.h, sim/exec/step_host.h): whose framework issues the
 * kernels, which CUDA graphs it captures, and its costs (< 0: "auto", the framework's). */
typedef enum { HOST_MEGATRON = 0, HOST_NONE } host_framework_kind;
/* Megatron's --cuda-graph-scope (bit i = scn_cuda_graph_scope_names[i]): attn, mlp (a dense layer's
 * MLP), moe_router (the router with the shared experts), moe_preprocess (the dispatcher's preprocessing
 * before its host sync), moe (the whole MoE MLP: drop-and-pad only), layer (the whole layer) */
enum { CG_ATTN = 1, CG_MLP = 2, CG_MOE_ROUTER = 4, CG_MOE_PREPROCESS = 8, CG_MOE = 16, CG_LAYER = 32 };
typedef struct {
    host_framework_kind framework;
    int cuda_graph_scope;       /* CG_* mask; 0 = eager (no graphs) */
    double call_us, launch_us, graph_launch_us, sync_us;
} host_cfg;

/* ---- the whole scenario --------------------------------------------------------------------------- */
typedef struct scenario {
    /* Where it came from, for error messages and relative paths. The paths a scenario names
     * (calibration, routing.trace, reliability.failure_trace) are kept exactly as written; consumers
     * resolve them relative to the current directory first, then to the directory of `file`, with
     * scenario_resolve_path() (sim/scenario/scenario_paths.h). */
    char file[SCN_PATH_MAX];
    char name[SCN_NAME_MAX];
    uint64_t seed;
    model_cfg model;
    cluster_cfg cluster;
    layout_cfg layout;
    routing_cfg routing;
    precision_cfg precision;
    /* Which fields the scenario set itself (its file, a sweep point, scenario_set_path): bit i is the
     * i-th row of the field table (scenario_fields.h, scn_field_given). Not a field. What the scenario
     * did not set comes from the model or cluster it names, from the values that follow a field it set
     * (precision.dispatch follows precision.compute, cluster.rails cluster.gpus_per_node) or from the
     * built-in default scenario; simrun show and the error messages tell which. */
    unsigned char given[SCN_MAX_FIELDS / 8];
    char calibration[SCN_PATH_MAX];   /* cost-model JSON ("" = none); relative path, see `file` */
    reliability_cfg reliability;
    faults_cfg faults;
    step_cfg step;
    host_cfg host;
    run_cfg run;
    output_cfg output;
} scenario;

static inline int scn_gpus(const scenario *s) { return s->cluster.nodes * s->cluster.gpus_per_node; }
/* Leaf switches per rail: leaf_down_ports nodes share one (the fabric's and the failure model's
 * count; platforms/fabric_geometry.h). */
/* GPUs that reach each other over NVLink: a node, or a rack-scale domain of several nodes */
static inline int scn_domain_gpus(const cluster_cfg *c) {
    return c->nvlink_domain_gpus > 0 ? c->nvlink_domain_gpus : c->gpus_per_node;
}
static inline int scn_leaf_of_node(const cluster_cfg *c, int node) {
    return c->leaf_down_ports > 0 ? node / c->leaf_down_ports : 0;
}
static inline int scn_leaves_per_rail(const cluster_cfg *c) {
    int per = c->leaf_down_ports > 0 ? c->leaf_down_ports : c->nodes;
    return (c->nodes + per - 1) / per;
}
/* Pods (cluster.pod_nodes): consecutive blocks of pod_nodes nodes, whole leaves each (checked by
 * scenario_check_cluster); one pod when pod_nodes is "auto" (0) or covers the cluster. */
static inline int scn_pod_nodes(const cluster_cfg *c) {
    return c->pod_nodes > 0 && c->pod_nodes < c->nodes ? c->pod_nodes : c->nodes;
}
static inline int scn_pods(const cluster_cfg *c) {
    int per = scn_pod_nodes(c);
    return per > 0 ? (c->nodes + per - 1) / per : 1;
}
static inline int scn_pod_of_node(const cluster_cfg *c, int node) { return node / scn_pod_nodes(c); }
/* Leaves of one rail in one pod (the last pod may hold fewer) */
static inline int scn_leaves_per_pod(const cluster_cfg *c) {
    int per = c->leaf_down_ports > 0 ? c->leaf_down_ports : c->nodes;
    return (scn_pod_nodes(c) + per - 1) / per;
}
/* Ports of a leaf's uplink bundle to its rail's spines, each at the NIC's line rate: the bundle carries
 * leaf_down_ports NICs' worth of bandwidth / oversubscription. A whole number when path_selection is
 * ecmp (scenario_check_cluster). */
static inline double scn_uplink_ports(const cluster_cfg *c) {
    int per = c->leaf_down_ports > 0 ? c->leaf_down_ports : c->nodes;
    return per / (c->oversubscription > 0 ? c->oversubscription : 1.0);
}
static inline int scn_etp(const scenario *s) { return s->layout.etp > 0 ? s->layout.etp : s->layout.tp; }
static inline int scn_cp(const scenario *s) { return s->layout.cp > 0 ? s->layout.cp : 1; }
/* attention data-parallel ranks per pipeline stage: GPUs / (tp * cp * pp) */
static inline int scn_attn_dp(const scenario *s) {
    return scn_gpus(s) / (s->layout.tp * scn_cp(s) * s->layout.pp);
}
/* tokens of one micro-batch on one attention rank (its CP share of every sequence) */
static inline double scn_rank_tokens(const scenario *s) {
    return (double)s->layout.micro_batch * s->model.seq_len / scn_cp(s);
}
/* tokens one rank routes through its EP group's all-to-all: its expert-TP group's sequence-parallel
 * shares, T x etp / tp (etp = tp: the whole micro-batch; etp = 1: the rank's own T / tp) */
static inline double scn_routed_tokens(const scenario *s) {
    return scn_rank_tokens(s) * scn_etp(s) / s->layout.tp;
}
/* micro-batches per pipeline per step: global batch spread over attention-DP ranks */
static inline int scn_micro_batches(const scenario *s) {
    return s->layout.global_batch / (s->layout.micro_batch * scn_attn_dp(s));
}
/* FP8 of any recipe */
static inline int dtype_is_fp8(dtype_kind d) { return d == DT_FP8 || d == DT_FP8_CS || d == DT_MXFP8 || d == DT_FP8_DS; }
/* A quantized GEMM recipe (FP8 or FP4): inputs are cast before every GEMM */
static inline int dtype_is_quantized(dtype_kind d) { return dtype_is_fp8(d) || d == DT_NVFP4; }
/* Bytes of one element (scales not included) */
static inline double dtype_bytes(dtype_kind d) {
    return dtype_is_fp8(d) ? 1.0 : d == DT_NVFP4 ? 0.5 : d == DT_FP32 ? 4.0 : 2.0;
}

#ifdef __cplusplus
}
#endif

#endif
