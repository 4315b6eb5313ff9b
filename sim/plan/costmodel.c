/* costmodel.c — reading model JSON ("moesim-costmodel/1"), built-in rooflines, and the pure cost
 * functions of sim/plan/costmodel.h. The model file format is documented in calibration/README.md. */
#include "sim/plan/costmodel.h"

#include "sim/base/fileio.h"
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

typedef struct {
    const char *file;
    moe_error *err;
} reader;

static int bad(reader *r, const char *path, const cJSON *v, const char *expected) {
    char *txt = v ? cJSON_PrintUnformatted(v) : NULL;
    char shown[128];
    snprintf(shown, sizeof shown, "%s", txt ? txt : "nothing");
    if (txt && strlen(txt) > 100) snprintf(shown + 96, sizeof shown - 96, "...");
    free(txt);
    moe_error_input(r->err, r->file, path, shown, "%s", expected);
    return EXIT_BADINPUT;
}

/* Number at obj.key with lo < x <= hi (lo_incl: lo <= x). Missing and !required -> *out untouched. */
static int get_num(reader *r, const cJSON *obj, const char *prefix, const char *key, int required,
                   double lo, int lo_incl, double hi, double *out) {
    char path[256];
    snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (!required) return 0;
        return bad(r, path, NULL, "a number (required field)");
    }
    char expect[128];
    snprintf(expect, sizeof expect, "a number in %s%g, %g]", lo_incl ? "[" : "(", lo, hi);
    if (!cJSON_IsNumber(v)) return bad(r, path, v, expect);
    double x = v->valuedouble;
    if (!isfinite(x) || x > hi || (lo_incl ? x < lo : x <= lo)) return bad(r, path, v, expect);
    *out = x;
    return 0;
}

static const cJSON *get_obj(reader *r, const cJSON *obj, const char *path, const char *key,
                            int required, int *rc) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *rc = 0;
    if (!v && !required) return NULL;
    if (!cJSON_IsObject(v)) {
        *rc = bad(r, path, v, "an object");
        return NULL;
    }
    return v;
}

static int get_str(reader *r, const cJSON *obj, const char *key, char *dst, size_t cap) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(v) || !v->valuestring[0]) return bad(r, key, v, "a non-empty string");
    snprintf(dst, cap, "%s", v->valuestring);
    return 0;
}

static int parse_mem(reader *r, const cJSON *o, const char *path, cm_mem_params *p) {
    double gbps = 0, launch_us = 0;
    if (get_num(r, o, path, "GBps", 1, 0, 0, 1e6, &gbps)) return EXIT_BADINPUT;
    if (get_num(r, o, path, "launch_us", 1, 0, 1, 1e6, &launch_us)) return EXIT_BADINPUT;
    p->bw_Bps = gbps * 1e9;
    p->launch_s = launch_us * 1e-6;
    return 0;
}

static int parse_model(reader *r, const cJSON *root, costmodel *cm) {
    int rc;
    if (!cJSON_IsObject(root)) return bad(r, "(root)", root, "a JSON object");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, CM_FORMAT) != 0)
        return bad(r, "format", fmt, "\"" CM_FORMAT "\"");
    if (get_str(r, root, "source", cm->source, sizeof cm->source)) return EXIT_BADINPUT;
    if (get_str(r, root, "device", cm->device, sizeof cm->device)) return EXIT_BADINPUT;
    const cJSON *meas = cJSON_GetObjectItemCaseSensitive(root, "measured");
    if (!cJSON_IsBool(meas)) return bad(r, "measured", meas, "true or false");
    cm->measured = cJSON_IsTrue(meas);

    /* peaks: bf16 required; the others default to the H100-class ratios */
    const cJSON *pk = get_obj(r, root, "peak_tflops", "peak_tflops", 1, &rc);
    if (rc) return rc;
    double bf16 = 0, fp8 = -1, fp16 = -1, fp32 = -1, fp4 = 0;
    if (get_num(r, pk, "peak_tflops", "bf16", 1, 0, 0, 1e6, &bf16)) return EXIT_BADINPUT;
    if (get_num(r, pk, "peak_tflops", "fp8", 0, 0, 0, 1e6, &fp8)) return EXIT_BADINPUT;
    if (get_num(r, pk, "peak_tflops", "fp16", 0, 0, 0, 1e6, &fp16)) return EXIT_BADINPUT;
    if (get_num(r, pk, "peak_tflops", "fp32", 0, 0, 0, 1e6, &fp32)) return EXIT_BADINPUT;
    if (get_num(r, pk, "peak_tflops", "fp4", 0, 0, 0, 1e6, &fp4)) return EXIT_BADINPUT;
    cm->peak_fp4_flops = fp4 * 1e12;
    cm->peak_flops[DT_BF16] = bf16 * 1e12;
    cm->peak_flops[DT_FP8] = (fp8 > 0 ? fp8 : 2.0 * bf16) * 1e12;
    cm->peak_flops[DT_FP16] = (fp16 > 0 ? fp16 : bf16) * 1e12;
    cm->peak_flops[DT_FP32] = (fp32 > 0 ? fp32 : bf16 / 14.7) * 1e12;

    const cJSON *g = get_obj(r, root, "gemm", "gemm", 1, &rc);
    if (rc) return rc;
    double launch_us = 0, op_gbps = 0;
    if (get_num(r, g, "gemm", "eff_max", 1, 0, 0, 1.0, &cm->gemm.eff_max)) return EXIT_BADINPUT;
    /* null: the operand term was not resolved by the data (CPU fits): no streaming cost */
    if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(g, "operand_GBps"))) op_gbps = INFINITY;
    else if (get_num(r, g, "gemm", "operand_GBps", 1, 0, 0, 1e6, &op_gbps)) return EXIT_BADINPUT;
    if (get_num(r, g, "gemm", "launch_us", 1, 0, 1, 1e6, &launch_us)) return EXIT_BADINPUT;
    cm->gemm.operand_Bps = op_gbps * 1e9;
    cm->gemm.launch_s = launch_us * 1e-6;

    const cJSON *m = get_obj(r, root, "memory", "memory", 1, &rc);
    if (rc) return rc;
    if (parse_mem(r, m, "memory", &cm->memory)) return EXIT_BADINPUT;

    const cJSON *a = get_obj(r, root, "attention", "attention", 1, &rc);
    if (rc) return rc;
    double a_launch_us = launch_us;
    if (get_num(r, a, "attention", "eff", 1, 0, 0, 1.0, &cm->attention_eff)) return EXIT_BADINPUT;
    if (get_num(r, a, "attention", "launch_us", 0, 0, 1, 1e6, &a_launch_us)) return EXIT_BADINPUT;
    cm->attention_launch_s = a_launch_us * 1e-6;

    const cJSON *ks = get_obj(r, root, "kernels", "kernels", 0, &rc);
    if (rc) return rc;
    const cJSON *k;
    cJSON_ArrayForEach(k, ks) {
        char path[160];
        snprintf(path, sizeof path, "kernels.%s", k->string);
        if (cm->n_kernels >= CM_MAX_KERNELS)
            return bad(r, path, NULL, "at most " "16" " per-kernel models");
        if (!cJSON_IsObject(k)) return bad(r, path, k, "an object");
        cm_kernel_params *kp = &cm->kernels[cm->n_kernels];
        snprintf(kp->name, sizeof kp->name, "%s", k->string);
        if (parse_mem(r, k, path, &kp->p)) return EXIT_BADINPUT;
        cm->n_kernels++;
    }

    const cJSON *ls = get_obj(r, root, "links", "links", 0, &rc);
    if (rc) return rc;
    const cJSON *l;
    cJSON_ArrayForEach(l, ls) {
        char path[160];
        snprintf(path, sizeof path, "links.%s", l->string);
        int cls = cm_link_class_parse(l->string);
        if (cls < 0) {
            char q[96];
            snprintf(q, sizeof q, "\"%s\"", l->string);
            moe_error_input(r->err, r->file, "links", q, "a link class: nvlink, rdma or pcie");
            return EXIT_BADINPUT;
        }
        if (!cJSON_IsObject(l)) return bad(r, path, l, "an object");
        double alpha_us = 0, gbps = 0;
        if (get_num(r, l, path, "alpha_us", 1, 0, 1, 1e7, &alpha_us)) return EXIT_BADINPUT;
        if (get_num(r, l, path, "GBps", 1, 0, 0, 1e6, &gbps)) return EXIT_BADINPUT;
        cm->link[cls] = (cm_link_params){ 1, alpha_us * 1e-6, gbps * 1e9 };
    }
    return 0;
}

int costmodel_parse(const char *file_label, const char *json_text, costmodel *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    reader r = { file_label ? file_label : "(model)", err };
    snprintf(out->file, sizeof out->file, "%s", r.file);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json_text, &end, 1);
    if (!root) {
        long off = end ? (long)(end - json_text) : 0;
        long line = 1;
        for (long i = 0; i < off && json_text[i]; i++) line += json_text[i] == '\n';
        char where[64];
        snprintf(where, sizeof where, "line %ld", line);
        return moe_error_input(err, r.file, where, NULL, "valid JSON");
    }
    int rc = parse_model(&r, root, out);
    cJSON_Delete(root);
    return rc;
}

int costmodel_load(const char *path, costmodel *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    char *text = read_file_text(path, NULL, err);
    if (!text) return err->code;
    int rc = costmodel_parse(path, text, out, err);
    free(text);
    return rc;
}

int costmodel_for_scenario(const scenario *s, costmodel *out, moe_error *err) {
    if (!s->calibration[0]) {
        *out = costmodel_from_cluster(&s->cluster);
        return 0;
    }
    const char *path = s->calibration;
    char alt[SCN_PATH_MAX * 2];
    if (path[0] != '/' && access(path, R_OK) != 0) {
        const char *root = getenv("MOESIM_SOURCE_DIR");
#ifdef MOESIM_SOURCE_DIR
        if (!root) root = MOESIM_SOURCE_DIR;
#endif
        if (root) {
            snprintf(alt, sizeof alt, "%s/%s", root, path);
            if (access(alt, R_OK) == 0) path = alt;
        }
    }
    if (access(path, R_OK) != 0)
        return moe_error_input(err, s->file, "calibration", s->calibration,
                               "a readable cost-model JSON (moesim-costmodel/1), e.g. "
                               "calibration/models/h800-published.json");
    int rc = costmodel_load(path, out, err);
    /* a model fitted without FP4 GEMMs takes the FP4 peak of the scenario's GPU */
    if (rc == 0 && out->peak_fp4_flops <= 0) out->peak_fp4_flops = s->cluster.gpu.fp4_tflops * 1e12;
    return rc;
}

cJSON *costmodel_provenance_json(const costmodel *cm) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "source", cm->source);
    cJSON_AddStringToObject(o, "device", cm->device);
    cJSON_AddBoolToObject(o, "measured", cm->measured);
    if (cm->file[0]) cJSON_AddStringToObject(o, "file", cm->file);
    return o;
}
