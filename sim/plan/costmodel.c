/* costmodel.c — reading model JSON ("moesim-costmodel/1"), built-in rooflines, and the pure cost
 * functions of sim/plan/costmodel.h. The model file format is documented in calibration/README.md. */
#include "sim/plan/costmodel.h"
#include "sim/scenario/scenario_paths.h"

#include "sim/base/json_read.h"
#include "sim/plan/recipes.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CM_FORMAT "moesim-costmodel/1"

static const char *const link_names[CM_LINK_N] = { "nvlink", "rdma", "pcie" };

const char *cm_link_class_name(cm_link_class link) {
    return (link >= 0 && link < CM_LINK_N) ? link_names[link] : "unknown";
}

int cm_link_class_parse(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < CM_LINK_N; i++)
        if (strcmp(name, link_names[i]) == 0) return i;
    if (strcmp(name, "roce") == 0 || strcmp(name, "ib") == 0 || strcmp(name, "infiniband") == 0)
        return CM_LINK_RDMA;
    return -1;
}

/* ---- predictions ------------------------------------------------------------------------------ */

/* Bytes a GEMM must move at least once: A and B in the input type, C in BF16 (FP32 for FP32). */
static double gemm_bytes(double m, double n, double k, dtype_kind dt) {
    double in_b = dtype_bytes(dt);
    double out_b = dt == DT_FP32 ? 4.0 : 2.0;
    return in_b * (m * k + k * n) + out_b * m * n;
}

static double peak_of(const costmodel *cm, dtype_kind dt) {
    int i = (int)dt;
    if (i >= 0 && i < 4) return cm->peak_flops[i];
    const quant_recipe *r = quant_recipe_of(dt);
    if (!r) return cm->peak_flops[DT_BF16];
    /* a model without an FP4 peak prices nvfp4 at twice its FP8 peak (the FP8:FP4 ratio of B200) */
    double base = r->fp4_base ? (cm->peak_fp4_flops > 0 ? cm->peak_fp4_flops : 2.0 * cm->peak_flops[DT_FP8])
                              : cm->peak_flops[DT_FP8];
    return base * r->gemm_rate;
}

/* GEMM time without the launch: FLOPs at eff_max of peak plus operand streaming. */
static double gemm_body_s(const costmodel *cm, double m, double n, double k, dtype_kind dt) {
    double f = 2.0 * m * n * k;
    return f / (peak_of(cm, dt) * cm->gemm.eff_max) + gemm_bytes(m, n, k, dt) / cm->gemm.operand_Bps;
}

double costmodel_gemm_s(const costmodel *cm, double m, double n, double k, dtype_kind dt) {
    if (m <= 0 || n <= 0 || k <= 0) return 0.0;
    return cm->gemm.launch_s + gemm_body_s(cm, m, n, k, dt);
}

double costmodel_gemm_eff(const costmodel *cm, double m, double n, double k, dtype_kind dt) {
    if (m <= 0 || n <= 0 || k <= 0) return 0.0;
    double f = 2.0 * m * n * k;
    return f / (peak_of(cm, dt) * gemm_body_s(cm, m, n, k, dt));
}

double costmodel_grouped_gemm_s(const costmodel *cm, const double *tokens, int n_experts,
                                double n, double k, dtype_kind dt) {
    double body = 0.0;
    int any = 0;
    for (int e = 0; e < n_experts; e++) {
        if (tokens[e] <= 0) continue;
        body += gemm_body_s(cm, tokens[e], n, k, dt);
        any = 1;
    }
    return any ? cm->gemm.launch_s + body : 0.0;
}

double costmodel_expert_ffn_fwd_s(const costmodel *cm, const double *tokens, int n_experts,
                                  double hidden, double ffn, dtype_kind dt) {
    double total_tokens = 0.0;
    for (int e = 0; e < n_experts; e++) total_tokens += tokens[e] > 0 ? tokens[e] : 0.0;
    if (total_tokens <= 0) return 0.0;
    double gate_up = costmodel_grouped_gemm_s(cm, tokens, n_experts, 2.0 * ffn, hidden, dt);
    /* SwiGLU reads the 2*ffn gate/up activations and writes ffn outputs, BF16. */
    double act_bytes = total_tokens * ffn * 3.0 * 2.0;
    double swiglu = costmodel_kernel_s(cm, "swiglu", act_bytes);
    double down = costmodel_grouped_gemm_s(cm, tokens, n_experts, hidden, ffn, dt);
    return gate_up + swiglu + down + costmodel_cast_s(cm, total_tokens * (hidden + ffn), dt);
}

double costmodel_cast_s(const costmodel *cm, double elements, dtype_kind dt) {
    const quant_recipe *r = quant_recipe_of(dt);
    return r && r->cast_extra_B > 0 ? costmodel_memory_bound_s(cm, elements * r->cast_extra_B) : 0.0;
}

double costmodel_memory_bound_s(const costmodel *cm, double bytes) {
    if (bytes <= 0) return 0.0;
    return cm->memory.launch_s + bytes / cm->memory.bw_Bps;
}

double costmodel_kernel_s(const costmodel *cm, const char *kernel, double bytes) {
    if (bytes <= 0) return 0.0;
    for (int i = 0; kernel && i < cm->n_kernels; i++)
        if (strcmp(cm->kernels[i].name, kernel) == 0)
            return cm->kernels[i].p.launch_s + bytes / cm->kernels[i].p.bw_Bps;
    return costmodel_memory_bound_s(cm, bytes);
}

double costmodel_attention_s(const costmodel *cm, double flops, dtype_kind dt) {
    if (flops <= 0) return 0.0;
    return cm->attention_launch_s + flops / (peak_of(cm, dt) * cm->attention_eff);
}

double costmodel_link_s(const costmodel *cm, cm_link_class link, double bytes) {
    if (link < 0 || link >= CM_LINK_N || !cm->link[link].present) return INFINITY;
    if (bytes <= 0) return 0.0;
    return cm->link[link].alpha_s + bytes / cm->link[link].beta_Bps;
}

/* ---- built-in rooflines --------------------------------------------------------------------------- */

costmodel costmodel_from_gpu(const gpu_cfg *gpu) {
    costmodel cm;
    memset(&cm, 0, sizeof cm);
    snprintf(cm.source, sizeof cm.source, "built-in roofline");
    snprintf(cm.device, sizeof cm.device, "%s", gpu->name[0] ? gpu->name : "unnamed GPU");
    cm.measured = 0;
    double bf16 = gpu->bf16_tflops * 1e12;
    cm.peak_flops[DT_BF16] = bf16;
    cm.peak_flops[DT_FP16] = bf16;
    cm.peak_flops[DT_FP8] = gpu->fp8_tflops > 0 ? gpu->fp8_tflops * 1e12 : 2.0 * bf16;
    cm.peak_flops[DT_FP32] = bf16 / 14.7;   /* H100 SXM: 67 TFLOP/s FP32 vs 989 BF16 */
    cm.peak_fp4_flops = gpu->fp4_tflops * 1e12;
    double hbm = gpu->hbm_GBps * 1e9;
    /* REFERENCE.md §6: large GEMMs reach ~75-80% of peak; STREAM-like kernels ~90% of HBM. */
    cm.gemm = (cm_gemm_params){ .eff_max = 0.80, .operand_Bps = 0.9 * hbm, .launch_s = 3e-6 };
    cm.memory = (cm_mem_params){ .bw_Bps = 0.9 * hbm, .launch_s = 2e-6 };
    cm.attention_eff = 0.50;
    cm.attention_launch_s = 3e-6;
    cm.link[CM_LINK_NVLINK] = (cm_link_params){ 1, 3e-6, 160e9 };
    cm.link[CM_LINK_RDMA] = (cm_link_params){ 1, 10e-6, 45e9 };
    cm.link[CM_LINK_PCIE] = (cm_link_params){ 1, 5e-6, 55e9 };
    return cm;
}

costmodel costmodel_from_cluster(const cluster_cfg *c) {
    costmodel cm = costmodel_from_gpu(&c->gpu);
    if (c->nvlink_GBps > 0) cm.link[CM_LINK_NVLINK].beta_Bps = c->nvlink_GBps * 1e9;
    if (c->nic_gbps > 0) cm.link[CM_LINK_RDMA].beta_Bps = c->nic_gbps / 8.0 * 0.9 * 1e9;
    if (c->pcie_GBps > 0) cm.link[CM_LINK_PCIE].beta_Bps = c->pcie_GBps * 1e9;
    if (c->latency_us.nvlink > 0) cm.link[CM_LINK_NVLINK].alpha_s = c->latency_us.nvlink * 1e-6;
    if (c->latency_us.same_leaf > 0) cm.link[CM_LINK_RDMA].alpha_s = c->latency_us.same_leaf * 1e-6;
    return cm;
}

/* ---- JSON reading --------------------------------------------------------------------------------- */

/* Keys a model file may hold besides the ones read: documentation and the fit's own record. */
static const char *const top_keys[] = {"format", "source", "device", "measured", "notes", "provenance",
                                       "traces", "base", "collectives", "peak_tflops", "gemm", "memory",
                                       "attention", "kernels", "links", NULL};
static const char *const peak_keys[] = {"bf16", "fp8", "fp16", "fp32", "fp4", NULL};
static const char *const gemm_keys[] = {"eff_max", "operand_GBps", "launch_us", "fit", "stderr", "dropped", NULL};
static const char *const attention_keys[] = {"eff", "launch_us", "fit", "stderr", "dropped", NULL};
static const char *const mem_keys[] = {"GBps", "launch_us", "fit", "stderr", "dropped", NULL};
static const char *const link_keys[] = {"alpha_us", "GBps", "from", NULL};

static int parse_mem(const json_reader *r, const cJSON *o, const char *path, cm_mem_params *p) {
    double gbps = 0, launch_us = 0;
    if (json_check_keys(r, o, path, mem_keys) ||
        json_get_number(r, o, path, "GBps", JSON_REQUIRED | JSON_LO_OPEN, 0, 1e6, &gbps) ||
        json_get_number(r, o, path, "launch_us", JSON_REQUIRED, 0, 1e6, &launch_us))
        return EXIT_BADINPUT;
    p->bw_Bps = gbps * 1e9;
    p->launch_s = launch_us * 1e-6;
    return 0;
}

static int parse_model(const json_reader *r, const cJSON *root, costmodel *cm) {
    if (!cJSON_IsObject(root)) return json_bad(r, "(root)", root, "a JSON object");
    if (json_check_keys(r, root, "", top_keys)) return EXIT_BADINPUT;
    const cJSON *fmt = json_member(root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, CM_FORMAT) != 0)
        return json_bad(r, "format", fmt, "\"" CM_FORMAT "\"");
    if (json_get_string(r, root, "", "source", JSON_REQUIRED | JSON_NONEMPTY, cm->source, sizeof cm->source) ||
        json_get_string(r, root, "", "device", JSON_REQUIRED | JSON_NONEMPTY, cm->device, sizeof cm->device) ||
        json_get_bool(r, root, "", "measured", JSON_REQUIRED, &cm->measured))
        return EXIT_BADINPUT;

    /* peaks: bf16 required; the others default to the H100-class ratios */
    const cJSON *pk, *g, *m, *a, *ks, *ls;
    double bf16 = 0, fp8 = -1, fp16 = -1, fp32 = -1, fp4 = 0;
    if (json_get_object(r, root, "", "peak_tflops", JSON_REQUIRED, &pk) ||
        json_check_keys(r, pk, "peak_tflops", peak_keys) ||
        json_get_number(r, pk, "peak_tflops", "bf16", JSON_REQUIRED | JSON_LO_OPEN, 0, 1e6, &bf16) ||
        json_get_number(r, pk, "peak_tflops", "fp8", JSON_LO_OPEN, 0, 1e6, &fp8) ||
        json_get_number(r, pk, "peak_tflops", "fp16", JSON_LO_OPEN, 0, 1e6, &fp16) ||
        json_get_number(r, pk, "peak_tflops", "fp32", JSON_LO_OPEN, 0, 1e6, &fp32) ||
        json_get_number(r, pk, "peak_tflops", "fp4", JSON_LO_OPEN, 0, 1e6, &fp4))
        return EXIT_BADINPUT;
    cm->peak_fp4_flops = fp4 * 1e12;
    cm->peak_flops[DT_BF16] = bf16 * 1e12;
    cm->peak_flops[DT_FP8] = (fp8 > 0 ? fp8 : 2.0 * bf16) * 1e12;
    cm->peak_flops[DT_FP16] = (fp16 > 0 ? fp16 : bf16) * 1e12;
    cm->peak_flops[DT_FP32] = (fp32 > 0 ? fp32 : bf16 / 14.7) * 1e12;

    double launch_us = 0, op_gbps = INFINITY;
    /* operand_GBps null: the operand term was not resolved by the data (CPU fits): no streaming cost */
    if (json_get_object(r, root, "", "gemm", JSON_REQUIRED, &g) || json_check_keys(r, g, "gemm", gemm_keys) ||
        json_get_number(r, g, "gemm", "eff_max", JSON_REQUIRED | JSON_LO_OPEN, 0, 1.0, &cm->gemm.eff_max) ||
        (!cJSON_IsNull(json_member(g, "operand_GBps")) &&
         json_get_number(r, g, "gemm", "operand_GBps", JSON_REQUIRED | JSON_LO_OPEN, 0, 1e6, &op_gbps)) ||
        json_get_number(r, g, "gemm", "launch_us", JSON_REQUIRED, 0, 1e6, &launch_us))
        return EXIT_BADINPUT;
    cm->gemm.operand_Bps = op_gbps * 1e9;
    cm->gemm.launch_s = launch_us * 1e-6;

    if (json_get_object(r, root, "", "memory", JSON_REQUIRED, &m) || parse_mem(r, m, "memory", &cm->memory))
        return EXIT_BADINPUT;

    double a_launch_us = launch_us;
    if (json_get_object(r, root, "", "attention", JSON_REQUIRED, &a) ||
        json_check_keys(r, a, "attention", attention_keys) ||
        json_get_number(r, a, "attention", "eff", JSON_REQUIRED | JSON_LO_OPEN, 0, 1.0, &cm->attention_eff) ||
        json_get_number(r, a, "attention", "launch_us", 0, 0, 1e6, &a_launch_us))
        return EXIT_BADINPUT;
    cm->attention_launch_s = a_launch_us * 1e-6;

    if (json_get_object(r, root, "", "kernels", 0, &ks)) return EXIT_BADINPUT;
    for (const cJSON *k = ks ? ks->child : NULL; k; k = k->next) {
        char path[160];
        json_path_key(path, sizeof path, "kernels", k->string);
        if (cm->n_kernels >= CM_MAX_KERNELS)
            return json_bad(r, path, NULL, "at most %d per-kernel models", CM_MAX_KERNELS);
        if (!cJSON_IsObject(k)) return json_bad(r, path, k, "an object");
        if (strlen(k->string) >= CM_NAME_MAX || !k->string[0])
            return json_bad(r, "kernels", NULL, "kernel names of 1 to %d characters", CM_NAME_MAX - 1);
        cm_kernel_params *kp = &cm->kernels[cm->n_kernels];
        snprintf(kp->name, sizeof kp->name, "%s", k->string);
        if (parse_mem(r, k, path, &kp->p)) return EXIT_BADINPUT;
        cm->n_kernels++;
    }

    if (json_get_object(r, root, "", "links", 0, &ls)) return EXIT_BADINPUT;
    for (const cJSON *l = ls ? ls->child : NULL; l; l = l->next) {
        char path[160];
        json_path_key(path, sizeof path, "links", l->string);
        int cls = cm_link_class_parse(l->string);
        if (cls < 0) {
            char q[96];
            json_truncate_into(l->string, q + 1, sizeof q - 2);
            q[0] = '"';
            strcat(q, "\"");
            return moe_error_input(r->err, r->file, "links", q, "a link class: nvlink, rdma or pcie");
        }
        if (!cJSON_IsObject(l)) return json_bad(r, path, l, "an object");
        double alpha_us = 0, gbps = 0;
        if (json_check_keys(r, l, path, link_keys) ||
            json_get_number(r, l, path, "alpha_us", JSON_REQUIRED, 0, 1e7, &alpha_us) ||
            json_get_number(r, l, path, "GBps", JSON_REQUIRED | JSON_LO_OPEN, 0, 1e6, &gbps))
            return EXIT_BADINPUT;
        cm->link[cls] = (cm_link_params){ 1, alpha_us * 1e-6, gbps * 1e9 };
    }
    return 0;
}

static int costmodel_from_json(const char *file, const cJSON *root, costmodel *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    json_reader r = { file, err };
    snprintf(out->file, sizeof out->file, "%s", file);
    return parse_model(&r, root, out);
}

int costmodel_parse(const char *file_label, const char *json_text, costmodel *out, moe_error *err) {
    const char *file = file_label ? file_label : "(model)";
    memset(out, 0, sizeof *out);
    cJSON *root = json_parse_strict(file, json_text, json_text ? strlen(json_text) : 0, err);
    if (!root) return err->code;
    int rc = costmodel_from_json(file, root, out, err);
    cJSON_Delete(root);
    return rc;
}

int costmodel_load(const char *path, costmodel *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    cJSON *root = json_load(path, 0, err);
    if (!root) return err->code;
    int rc = costmodel_from_json(path, root, out, err);
    cJSON_Delete(root);
    return rc;
}

int costmodel_for_scenario(const scenario *s, costmodel *out, moe_error *err) {
    if (!s->calibration[0]) {
        *out = costmodel_from_cluster(&s->cluster);
        return 0;
    }
    char path[SCN_PATH_MAX * 2 + 4096];
    if (scenario_resolve_path(s, s->calibration, path, sizeof path) != 0 || access(path, R_OK) != 0)
        return moe_error_input(err, s->file, "calibration", s->calibration,
                               "a readable cost-model JSON (moesim-costmodel/1), e.g. "
                               "calibration/models/h800-published.json");
    if (costmodel_load(path, out, err)) return moe_error_context(err, s->file, "calibration");
    /* a model fitted without FP4 GEMMs takes the FP4 peak of the scenario's GPU */
    if (out->peak_fp4_flops <= 0) out->peak_fp4_flops = s->cluster.gpu.fp4_tflops * 1e12;
    return 0;
}

cJSON *costmodel_provenance_json(const costmodel *cm) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "source", cm->source);
    cJSON_AddStringToObject(o, "device", cm->device);
    cJSON_AddBoolToObject(o, "measured", cm->measured);
    if (cm->file[0]) cJSON_AddStringToObject(o, "file", cm->file);
    return o;
}
