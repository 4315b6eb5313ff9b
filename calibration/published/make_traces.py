#!/usr/bin/env python3
"""make_traces.py — the published kernel and link measurements moesim is calibrated from, as
calibration traces (calibration/traces/published-*.json, format moesim-trace/1, provenance kind
"published"). Every point carries its source (repository, file, commit, table row or figure) and a
"table" label (the fit reports its residuals per table). Nothing here was measured by moesim: the
numbers are copied from the cited files; times are derived from the published rates with the
publisher's own FLOP and byte counts (stated per table). Deterministic: rerun to regenerate.

    python3 calibration/published/make_traces.py      (from the repository root)
"""
import json, math, os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "traces")


def prov(device, sm, source, cuda="n/a", date="n/a", peak_bf16=None, hbm=None):
    p = {"kind": "published", "device": device, "sm_count": sm, "clock_mhz": "n/a", "driver": "n/a",
         "cuda": cuda, "cublas": "n/a", "nccl": "n/a", "host": "n/a", "date": date, "git": "n/a", "source": source}
    if peak_bf16: p["peak_bf16_tflops"] = peak_bf16
    if hbm: p["hbm_GBps"] = hbm
    return p


def gemm_point(kernel, dtype, m, n, k, groups, tflops, in_B, out_B, table, source):
    flops = 2.0 * groups * m * n * k
    return {"kernel": kernel, "shape": {"m": m, "n": n, "k": k, "groups": groups}, "dtype": dtype,
            "time_us": round(flops / (tflops * 1e12) * 1e6, 4), "bytes": groups * (in_B * (m * k + k * n) + out_B * m * n),
            "flops": flops, "ranks": 1, "table": table, "source": source}


def write(name, provenance, points):
    doc = {"format": "moesim-trace/1", "provenance": provenance, "points": points}
    with open(os.path.join(OUT, name), "w") as f:
        f.write(json.dumps(doc, indent=1) + "\n")


# ---- DeepGEMM (deepseek-ai/DeepGEMM README), FP8 E4M3 with 1x128 activation / 128x128 weight scales,
# BF16 output, H800 SXM5, NVCC 12.8. TFLOPS = 2 m n k / t (x groups); the README's memory bandwidth
# counts m k + k n + 2 m n bytes (tests/test_core.py at 327ec92, lines 83-84 and 111-112).
DG = "deepseek-ai/DeepGEMM README.md at %s (%s), table \"%s\", row M=%d N=%d K=%d%s: %s TFLOPS"
DENSE = [(64, 2112, 7168), (64, 24576, 1536), (64, 32768, 512), (64, 7168, 16384), (64, 4096, 7168), (64, 7168, 2048),
         (128, 2112, 7168), (128, 24576, 1536), (128, 32768, 512), (128, 7168, 16384), (128, 4096, 7168), (128, 7168, 2048),
         (4096, 2112, 7168), (4096, 24576, 1536), (4096, 32768, 512), (4096, 7168, 16384), (4096, 4096, 7168), (4096, 7168, 2048)]
DENSE_TF = {"2025-02": [206, 289, 219, 336, 287, 295, 352, 535, 358, 645, 533, 510, 1058, 990, 590, 1358, 1304, 1025],
            "2025-04": [206, 289, 219, 336, 287, 295, 352, 535, 358, 645, 533, 510, 1127, 1212, 775, 1520, 1410, 1168]}
CONTIG = [(4, 8192, 4096, 7168), (4, 8192, 7168, 2048), (8, 4096, 4096, 7168), (8, 4096, 7168, 2048)]
CONTIG_TF = {"2025-02": [1297, 1099, 1288, 1093], "2025-04": [1346, 1214, 1346, 1214]}
MASKED = [(1, 1024, 4096, 7168), (1, 1024, 7168, 2048), (2, 512, 4096, 7168), (2, 512, 7168, 2048), (4, 256, 4096, 7168), (4, 256, 7168, 2048)]
MASKED_TF = [1233, 925, 1040, 916, 932, 815]   # identical in every version
DG_COMMIT = {"2025-02": ("a6d97a1c1b48a7a9d7994d0e155ee6f11d0a3f07", "2025-02-25, Initial commit"),
             "2025-04": ("a9967bc27cdcead54e8d11e1736644eb51d49b33", "2025-04-09, the last table; identical at 327ec92")}
for ver in ("2025-02", "2025-04"):
    c, when = DG_COMMIT[ver]
    pts = []
    for (m, n, k), tf in zip(DENSE, DENSE_TF[ver]):
        src = DG % (c, when, "Normal GEMMs for dense models", m, n, k, "", tf)
        pts.append(gemm_point("gemm", "fp8", m, n, k, 1, tf, 1, 2, "deepgemm-%s-dense" % ver, src))
    for (g, m, n, k), tf in zip(CONTIG, CONTIG_TF[ver]):
        src = DG % (c, when, "Grouped GEMMs for MoE models (contiguous layout)", m, n, k, " #Groups=%d" % g, tf)
        pts.append(gemm_point("grouped_gemm", "fp8", m, n, k, g, tf, 1, 2, "deepgemm-%s-contiguous" % ver, src))
    for (g, m, n, k), tf in zip(MASKED, MASKED_TF):
        src = DG % (c, when, "Grouped GEMMs for MoE models (masked layout)", m, n, k, " #Groups=%d" % g, tf)
        pts.append(gemm_point("grouped_gemm", "fp8", m, n, k, g, tf, 1, 2, "deepgemm-%s-masked" % ver, src))
    write("published-deepgemm-h800-%s.json" % ver,
          prov("NVIDIA H800 SXM5", 132, "DeepGEMM README performance tables (%s version, commit %s): FP8 GEMMs on H800 "
               "SXM5 with NVCC 12.8, 1x128 / 128x128 block scales, BF16 output" % (ver, c), cuda="12.8",
               date=ver + "-01T00:00:00Z", peak_bf16=989, hbm=3350), pts)

# ---- XLA's measured matmul table (OpenXLA, xla/backends/gpu/cost_model/matmul_interpolator_data.h,
# kDefaultMatmulPTable, header "Copyright 2025 The OpenXLA Authors"; the copy read is the public code
# index's file id 1329180006 (316,597 characters): its repository commit could not be retrieved here).
# Values are FLOP/s per entry b=1, m x n x k, for "bf16xbf16->bf16" and "f8e4m3fnxf8e4m3fn->bf16".
# The file does not name the SKUs: "sm_90" is labelled "NVIDIA H100 80GB HBM3" in XLA's sibling
# profile files; "sm_100" is a Blackwell B200-class part. The sm_90 FP8 entries are NOT imported:
# they exceed H100's dense FP8 peak (4096^3: 2.42e15 FLOP/s vs 1.979e15), so they cannot be dense
# E4M3 GEMM rates; the sm_100 FP8 entries stay below B200's 4.5e15 and are imported.
XLA_SRC = ("OpenXLA xla/backends/gpu/cost_model/matmul_interpolator_data.h kDefaultMatmulPTable (code index "
           "file id 1329180006), key \"%s\", entry b: 1 m: %d n: %d k: %d, flops { key: \"%s\" value: %s }")
SM90_BF16 = [  # m, n, k, TFLOPS (value / 1e12, 5 significant digits as written / 1e12)
    (256, 256, 256, 6.721641025641), (256, 512, 256, 12.372578171091), (256, 1024, 256, 23.692449779346),
    (256, 2048, 256, 43.804741514360), (256, 4096, 256, 82.646384236453), (256, 256, 512, 11.459846994535),
    (256, 512, 512, 23.045626373626), (256, 1024, 512, 43.804741514360), (256, 2048, 512, 83.055524752475),
    (256, 4096, 512, 146.206675381263), (256, 256, 1024, 18.893261261261), (256, 512, 1024, 41.120627450980),
    (256, 1024, 1024, 75.065843400447), (256, 2048, 1024, 141.579881856540), (256, 4096, 1024, 237.553500884955),
    (256, 256, 2048, 31.895847908745), (256, 512, 2048, 63.913203809523),
    (2048, 512, 4096, 458.080982935153), (2048, 1024, 4096, 663.622882571075), (2048, 2048, 4096, 752.183414360770),
    (2048, 4096, 4096, 752.315168330705),
    (4096, 256, 256, 84.519979848866), (4096, 512, 256, 141.879205073995), (4096, 1024, 256, 222.953036544850),
    (4096, 2048, 256, 308.192257175660), (4096, 4096, 256, 398.567863400148), (4096, 256, 512, 144.943550755939),
    (4096, 512, 512, 240.103270125223), (4096, 1024, 512, 354.604301188903), (4096, 2048, 512, 449.640629815745),
    (4096, 4096, 512, 551.768665981500), (4096, 256, 1024, 229.040491467576), (4096, 512, 1024, 377.546351617440),
    (4096, 1024, 1024, 497.563403151065), (4096, 2048, 1024, 604.584360360360), (4096, 4096, 1024, 685.221329929802),
    (4096, 256, 2048, 314.327231850117), (4096, 512, 2048, 531.029586547972), (4096, 1024, 2048, 643.730110311750),
    (4096, 2048, 2048, 727.467360433604), (4096, 4096, 2048, 735.565558486042), (4096, 256, 4096, 398.863976225854),
    (4096, 512, 4096, 661.986327990135), (4096, 1024, 4096, 751.656859642982), (4096, 2048, 4096, 759.364797736916),
    (4096, 4096, 4096, 780.193877565849)]
SM100 = [  # m, n, k, bf16 TFLOPS, fp8 (e4m3 x e4m3) TFLOPS
    (256, 256, 256, 6.765006451612, 6.919866364198), (256, 512, 256, 13.400332268370, 12.404595933456),
    (256, 1024, 256, 18.551171803731, 21.287506423473), (256, 2048, 256, 46.091252747252, 41.721395088591),
    (256, 4096, 256, 89.240510638297, 92.182505494505), (256, 256, 512, 12.593143929442, 13.187043426999),
    (256, 512, 512, 21.017495772001, 26.540978445718), (256, 1024, 512, 39.102032920611, 50.676884274117),
    (256, 2048, 512, 88.738993719008, 94.769799117387), (256, 4096, 512, 163.281907542579, 157.903209411764),
    (256, 256, 1024, 20.213513253012, 21.024080200501), (256, 512, 1024, 33.156553359683, 48.770976744186),
    (256, 1024, 1024, 81.245598062954, 81.245598062954), (256, 2048, 1024, 156.796411214953, 148.429889964058),
    (256, 4096, 1024, 292.333739177783, 311.410041763341), (256, 256, 2048, 34.583284720432, 44.020245326336),
    (256, 512, 2048, 69.024287991771, 84.720042922518), (256, 1024, 2048, 136.677930753564, 162.442030862329),
    (256, 2048, 2048, 266.768155031055, 309.168391592283), (256, 4096, 2048, 464.421204152249, 566.170220933298),
    (256, 256, 4096, 53.081956891437, 68.759081967213), (256, 512, 4096, 104.694015600624, 135.300129032258),
    (256, 1024, 4096, 205.855411042944, 260.585323140395), (256, 2048, 4096, 394.106009910075, 488.897814001138),
    (256, 4096, 4096, 651.394145142943, 930.452187175043),
    (512, 256, 256, 13.568310553983, 12.863497028943), (512, 512, 256, 23.489276863843, 26.214400000000),
    (512, 1024, 256, 47.127011235955, 41.521338901778), (512, 2048, 256, 90.933420054200, 93.466384401114),
    (512, 4096, 256, 165.241893505694, 169.466828282828), (512, 256, 512, 17.924376068376, 25.885772034715),
    (512, 512, 512, 48.480306303052, 39.290903981264), (512, 1024, 512, 89.478485333333, 91.678775956284),
    (512, 2048, 512, 162.466609774549, 161.683756060834), (512, 4096, 512, 291.698403694648, 328.965019607843),
    (512, 256, 1024, 44.143308008551, 41.630808933002),
    (4096, 2048, 1024, 913.822828936170, 1332.185885856079), (4096, 4096, 1024, 1075.624166291009, 1895.395982347749),
    (4096, 256, 2048, 458.766000427259, 471.767057996485), (4096, 512, 2048, 762.397673914972, 979.468026453819),
    (4096, 1024, 2048, 990.308345861194, 1462.614437595777), (4096, 2048, 2048, 1170.011862566826, 1833.497244823906),
    (4096, 4096, 2048, 1277.788708367422, 2484.974207564909), (4096, 256, 4096, 645.132151107773, 861.751062600321),
    (4096, 512, 4096, 991.451361034164, 1484.991717866712), (4096, 1024, 4096, 1204.928403983728, 1951.814267666439),
    (4096, 2048, 4096, 1343.541814655509, 2499.435394486069), (4096, 4096, 4096, 1416.867213789406, 2764.981863158106)]


def xla_value(tf):
    return "%d" % round(tf * 1e12)


pts = [gemm_point("gemm", "bf16", m, n, k, 1, tf, 2, 2, "xla-sm90-bf16",
                  XLA_SRC % ("sm_90", m, n, k, "bf16xbf16->bf16", xla_value(tf))) for m, n, k, tf in SM90_BF16]
# MAMF (stas00/ml-engineering compute/accelerator/README.md at 744d01e18b79512572f64a6bbd8b5f4a725203a7,
# "Maximum Achievable Matmul FLOPS comparison table"): torch.mm, mean of 100 iterations after 50
# warm-ups, best of a shape sweep
pts.append(gemm_point("gemm", "bf16", 2048, 2048, 13312, 1, 794.5, 2, 2, "mamf-h100-bf16",
                      "stas00/ml-engineering compute/accelerator/README.md at 744d01e18b79512572f64a6bbd8b5f4a725203a7, "
                      "Maximum Achievable Matmul FLOPS table, row BF16 | NVIDIA H100 SXM | 794.5 | 989 | 80.3% | 2048x2048x13312"))
write("published-gemm-bf16-h100.json",
      prov("NVIDIA H100 SXM5 80GB", 132, "XLA's measured sm_90 matmul table (BF16) and the MAMF table of "
           "stas00/ml-engineering (BF16 torch.mm)", peak_bf16=989, hbm=3350), pts)

# per-tensor scaled FP8 (cuBLASLt) on Hopper: MAMF FP8 row (torch._scaled_mm) on H100 SXM and the
# cuBLASLt FP8 sweep of Azure/AI-benchmarking-guide on H200 (same SM90 compute as H100; more HBM)
AZ = ("Azure/AI-benchmarking-guide Azure_Results/ND_H200_v5_results.md at 7f20e5fa3b2f9a46d8404af1f6fb14b049d6d5cc, "
      "cuBLASLt FP8 GEMM, %s: %s TFLOPS")
pts = [gemm_point("gemm", "fp8-cs", 1024, 9216, 14336, 1, 1402.6, 1, 2, "mamf-h100-fp8",
                  "stas00/ml-engineering compute/accelerator/README.md at 744d01e18b79512572f64a6bbd8b5f4a725203a7, "
                  "Maximum Achievable Matmul FLOPS table, row FP8 e4m3 | NVIDIA H100 SXM | 1402.6 | 1979 | 70.9% | 1024x9216x14336")]
for (m, n, k), tf in [((1024, 1024, 1024), 290.8), ((2048, 2048, 2048), 1013.4), ((4096, 4096, 4096), 1249.1),
                      ((8192, 8192, 8192), 1300.6), ((16384, 16384, 16384), 1366.3), ((6144, 12288, 12288), 1318.0)]:
    pts.append(gemm_point("gemm", "fp8-cs", m, n, k, 1, tf, 1, 2, "azure-h200-fp8", AZ % ("%dx%dx%d" % (m, n, k), tf)))
write("published-gemm-fp8cs-h100.json",
      prov("NVIDIA H100 SXM5 / H200 (SM90)", 132, "per-tensor scaled FP8 GEMMs on SM90: MAMF (H100 SXM) and "
           "Azure's cuBLASLt FP8 sweep (H200)", peak_bf16=989, hbm=3350), pts)

pts = []
for m, n, k, bf, f8 in SM100:
    pts.append(gemm_point("gemm", "bf16", m, n, k, 1, bf, 2, 2, "xla-sm100-bf16",
                          XLA_SRC % ("sm_100", m, n, k, "bf16xbf16->bf16", xla_value(bf))))
    pts.append(gemm_point("gemm", "fp8-cs", m, n, k, 1, f8, 1, 2, "xla-sm100-fp8",
                          XLA_SRC % ("sm_100", m, n, k, "f8e4m3fnxf8e4m3fn->bf16", xla_value(f8))))
# MAMF on B200 SXM (same table and commit as the H100 rows above): torch.mm BF16 and torch._scaled_mm FP8
# (per-tensor scales)
MAMF = ("stas00/ml-engineering compute/accelerator/README.md at 744d01e18b79512572f64a6bbd8b5f4a725203a7, "
        "Maximum Achievable Matmul FLOPS table, row %s")
pts.append(gemm_point("gemm", "bf16", 1792, 16128, 3072, 1, 1745.0, 2, 2, "mamf-b200",
                      MAMF % "BF16 | NVIDIA B200 SXM | 1745.0 | 2250 | 77.6% | 1792x16128x3072 (torch 2.7.1+cu128)"))
pts.append(gemm_point("gemm", "fp8-cs", 15360, 4096, 3072, 1, 3432.5, 1, 2, "mamf-b200",
                      MAMF % "FP8 e4m3 | NVIDIA B200 SXM | 3432.5 | 4500 | 76.3% | 15360x4096x3072"))
# FP4 block-scaled GEMMs on B200 through cuBLAS (what TransformerEngine's NVFP4 GEMMs call): the cuBLAS 13.3
# column of deepseek-ai/DeepGEMM pull request #348 (opened 2026-06-01, CUDA 12.9), MXFP4 x MXFP4 -> BF16
# (E8M0 scales per 32; NVFP4's E4M3 scales per 16 run on the same block-scaled FP4 tensor-core path), shapes M x N x K
DG348 = ("deepseek-ai/DeepGEMM pull request #348 (2026-06-01) description, MXFP4 GEMM table on B200, row %dx%dx%d: "
         "DeepGEMM %d / cublasTest 13.3 %d TFLOPS (the cuBLAS figure taken)")
for (m, n, k), dg, cb in [((128, 2048, 7168), 328, 338), ((512, 7168, 2048), 1439, 1190), ((1024, 7168, 2048), 2056, 1399),
                          ((4096, 4096, 7168), 5332, 3939), ((8192, 8192, 8192), 5702, 5239)]:
    pts.append(gemm_point("gemm", "nvfp4", m, n, k, 1, cb, 0.5, 2, "cublas-b200-fp4", DG348 % (m, n, k, dg, cb)))
write("published-gemm-b200.json",
      prov("NVIDIA B200 (sm_100)", 148, "XLA's measured sm_100 matmul table (BF16, and E4M3 x E4M3 -> BF16 with "
           "per-tensor scales: fp8-cs), MAMF's B200 rows and cuBLAS's block-scaled FP4 GEMMs on B200",
           peak_bf16=2250, hbm=8000), pts)

# GB200: MAMF rows (same table) and Azure's cuBLASLt FP8 and FP4 sweeps on ND GB200 v6 (CUDA 12.8, random
# init, 10,000 warm-ups; Azure/AI-benchmarking-guide Azure_Results/ND_GB200_v6_results.md at 2a370be6)
AZ_GB = ("Azure/AI-benchmarking-guide Azure_Results/ND_GB200_v6_results.md at 2a370be6, cuBLASLt %s GEMM, %s: "
         "%s TFLOPS")
pts = [gemm_point("gemm", "bf16", 4096, 9728, 2048, 1, 1822.0, 2, 2, "mamf-gb200",
                  MAMF % "BF16 | NVIDIA GB200 | 1822.0 | 2500 | 72.9% | 4096x9728x2048"),
       gemm_point("gemm", "fp8-cs", 19456, 5120, 1536, 1, 3615.6, 1, 2, "mamf-gb200",
                  MAMF % "FP8 e4m3 | NVIDIA GB200 | 3615.6 | 5000 | 72.3% | 19456x5120x1536")]
for (m, n, k), tf in [((2048, 2048, 2048), 2243.6), ((4096, 4096, 4096), 2834.6), ((8192, 8192, 8192), 2876.6),
                      ((16384, 16384, 16384), 2906.9), ((32768, 32768, 32768), 2825.6), ((6144, 12288, 12288), 2895.6)]:
    pts.append(gemm_point("gemm", "fp8-cs", m, n, k, 1, tf, 1, 2, "azure-gb200-fp8", AZ_GB % ("FP8", "%dx%dx%d" % (m, n, k), tf)))
for (m, n, k), tf in [((4096, 4096, 4096), 5177.3), ((8192, 8192, 8192), 7535.6), ((16384, 16384, 16384), 7627.6),
                      ((32768, 32768, 32768), 7487.2)]:
    pts.append(gemm_point("gemm", "nvfp4", m, n, k, 1, tf, 0.5, 2, "azure-gb200-fp4", AZ_GB % ("FP4", "%dx%dx%d" % (m, n, k), tf)))
write("published-gemm-gb200.json",
      prov("NVIDIA GB200 (sm_100, 1200 W)", 148, "MAMF's GB200 rows and Azure's cuBLASLt FP8 and FP4 GEMM sweeps on "
           "ND GB200 v6", peak_bf16=2500, hbm=8000), pts)

# B300 (Blackwell Ultra, sm_103): MAMF rows (same table)
pts = [gemm_point("gemm", "bf16", 12288, 18432, 1024, 1, 1769.0, 2, 2, "mamf-b300",
                  MAMF % "BF16 | NVIDIA B300 SXM | 1769.0 | 2250 | 78.6% | 12288x18432x1024 (torch 2.9.1+cu130)"),
       gemm_point("gemm", "fp8-cs", 3072, 6144, 7168, 1, 3353.3, 1, 2, "mamf-b300",
                  MAMF % "FP8 e4m3 | NVIDIA B300 SXM | 3353.3 | 4500 | 74.5% | 3072x6144x7168")]
write("published-gemm-b300.json",
      prov("NVIDIA B300 SXM (sm_103)", 160, "MAMF's B300 rows (BF16 torch.mm, FP8 torch._scaled_mm)",
           peak_bf16=2250, hbm=8000), pts)

# ---- FlashAttention-3 (Shah et al., arXiv:2407.08608, Figures "Attention forward/backward speed, head
# dim D (H100 80GB SXM5)"), FP16/BF16, B x S = 16k tokens, H x D = 2048; TFLOPS as the paper counts
# them: forward 4 B H S^2 D (halved when causal), backward 2.5 x forward. Bar labels transcribed from
# the figure images (research notes: two transcriptions disagree at hdim128 non-causal S=512, 497 vs
# 467: 497 taken); causal vs non-causal assigned by inference (the causal chart has the lower
# short-sequence bars). Backward charts: head dims 64 and 128, non-causal only.
SEQ = [512, 1024, 2048, 4096, 8192, 16384]
FA_FWD = {(64, 0): [333, 392, 460, 476, 496, 497], (64, 1): [197, 265, 371, 420, 460, 473],
          (128, 0): [497, 565, 625, 638, 646, 648], (128, 1): [292, 423, 521, 579, 602, 616],
          (256, 0): [482, 639, 707, 736, 746, 756], (256, 1): [286, 427, 537, 612, 628, 642]}
FA_BWD = {(64, 0): [272, 363, 422, 453, 472, 474], (128, 0): [316, 424, 501, 542, 559, 561]}


def attn_point(direction, d, causal, s, tf, table, src, batch=None, heads=None):
    B = batch if batch else 16384 // s
    H = heads if heads else 2048 // d
    fwd = 4.0 * B * H * s * s * d * (0.5 if causal else 1.0)
    flops = fwd if direction == "fwd" else 2.5 * fwd
    # bytes: Q, K, V read and O written (forward); plus dO read, dQ dK dV written (backward), BF16
    bytes_ = 2.0 * B * H * s * d * (4 if direction == "fwd" else 8)
    return {"kernel": "attention_" + direction, "shape": {"batch": B, "heads": H, "seq": s, "d_qk": d, "d_v": d,
            "causal": causal}, "dtype": "bf16", "time_us": round(flops / (tf * 1e12) * 1e6, 4), "bytes": bytes_,
            "flops": flops, "ranks": 1, "table": table, "source": src}


FA = ("FlashAttention-3 (arXiv:2407.08608) figure \"Attention %s speed, head dim %d (H100 80GB SXM5)\"%s, "
      "FlashAttention-3 bar at sequence length %d: %d TFLOPS")
pts = []
for (d, c), v in sorted(FA_FWD.items()):
    for s, tf in zip(SEQ, v):
        pts.append(attn_point("fwd", d, c, s, tf, "fa3-fwd", FA % ("forward", d, " (causal, inferred)" if c else
                              " (non-causal, inferred)", s, tf)))
for (d, c), v in sorted(FA_BWD.items()):
    for s, tf in zip(SEQ, v):
        pts.append(attn_point("bwd", d, c, s, tf, "fa3-bwd", FA % ("backward", d, "", s, tf)))
# independent check of the forward: pytorch/benchmark ff65cb675209d2308f7d27c6920af8a32de9aa90 (PR #2391),
# flash_v3 forward, head dim 128, H = 16, (B, S) with B S = 16k
PB = ("pytorch/benchmark commit ff65cb675209d2308f7d27c6920af8a32de9aa90 (PR #2391) message: flash_v3 forward, "
      "head dim 128, (B=%d, H=16, S=%d): %.1f TFLOPS")
for B, s, tf in [(32, 512, 430.3), (16, 1024, 517.1), (8, 2048, 565.5), (4, 4096, 590.2), (2, 8192, 614.2), (1, 16384, 620.7)]:
    pts.append(attn_point("fwd", 128, 0, s, tf, "pytorch-benchmark-fa3-fwd", PB % (B, s, tf), batch=B, heads=16))
write("published-attention-h100.json",
      prov("NVIDIA H100 80GB SXM5", 132, "FlashAttention-3 forward and backward throughput (arXiv:2407.08608) "
           "and pytorch/benchmark's flash_v3 forward", peak_bf16=989, hbm=3350), pts)


# ---- links: nccl-tests busbw (bytes = nccl-tests size, busbw as printed) and DeepEP's achieved rates
def coll_point(op, link, ranks, nodes, size, busbw, line_GBps, table, src):
    """bytes = nccl-tests size; time from busbw (size x busbw factor / busbw); line_GBps: the line rate
    per GPU and direction of the link measured (the fit records achieved / line as an efficiency)"""
    factor = {"all_reduce": 2.0 * (ranks - 1) / ranks, "all_gather": (ranks - 1) / ranks,
              "reduce_scatter": (ranks - 1) / ranks, "alltoall": (ranks - 1) / ranks, "sendrecv": 1.0}[op]
    t_us = size * factor / (busbw * 1e9) * 1e6
    return {"kernel": op, "shape": {"size": size, "nodes": nodes, "line_GBps": line_GBps}, "dtype": "bf16",
            "time_us": round(t_us, 4), "bytes": size, "flops": 0, "ranks": ranks, "link": link, "busbw_GBps": busbw,
            "table": table, "source": src}


ML = ("stas00/ml-engineering network/README.md at 744d01e18b79512572f64a6bbd8b5f4a725203a7: nccl-tests on 8 x H200 "
      "(NVLink 4, the same as H100), 16 GiB payload, %s: busbw %.1f GB/s")
# NVLink 4: 900 GB/s bidirectional per GPU (18 links), 450 per direction (H100/H200 datasheets)
pts = [coll_point("all_gather", "nvlink", 8, 1, 16 * 2**30, 361.4, 450, "nccl-tests-h200-nvlink", ML % ("all-gather, Ring", 361.4)),
       coll_point("reduce_scatter", "nvlink", 8, 1, 16 * 2**30, 362.9, 450, "nccl-tests-h200-nvlink", ML % ("reduce-scatter, Ring", 362.9)),
       coll_point("all_reduce", "nvlink", 8, 1, 16 * 2**30, 367.2, 450, "nccl-tests-h200-nvlink", ML % ("all-reduce, NVLS off (Ring)", 367.2))]
# inter-node: 4 nodes of 8 x H200 over EFA (8 x 400 Gb/s per node, as DGX H100's 8 x CX7 400G), 32 ranks,
# 4 GiB all-reduce, Ring: 364.65-364.87 GB/s busbw. NCCL runs one ring channel per NIC and every ring
# edge carries the same bytes, so the per-NIC rate is busbw / 8 NICs per node = 45.6 GB/s (a derived
# figure, the same order as the nccl-tests maintainers' "46-48GB/s per NIC" for NDR 400 Gb/s,
# NVIDIA/nccl-tests issue #290); recorded as one point-to-point transfer per NIC at that rate, 50 GB/s line.
pts.append(coll_point("sendrecv", "rdma", 2, 2, 4 * 2**30 // 8, 364.8 / 8, 50, "nccl-tests-h200-4node",
                      "derived from stas00/ml-engineering network/README.md at 744d01e18b79512572f64a6bbd8b5f4a725203a7: "
                      "nccl-tests all-reduce, 4 nodes x 8 H200 (AWS p5en, EFA 8 x 400 Gb/s, NCCL 2.27.7), 4 GiB, Ring: "
                      "busbw 364.65-364.87 GB/s = 8 NICs x 45.6 GB/s"))
write("published-nccl-tests-h100.json",
      prov("NVIDIA H100 / H200 (NVLink 4, 8 x 400 Gb/s per node)", 132, "nccl-tests busbw on 8-GPU NVLink 4 "
           "nodes and across 4 nodes (stas00/ml-engineering)"), pts)

# DeepEP (deepseek-ai/DeepEP README at 567632dd59810d77b3cc05553df953cc0f779799, "Normal kernels with
# NVLink and RDMA forwarding", H800 + CX7 400 Gb/s): the intranode EP8 rows are NVLink-bound; their
# counted bytes (tests/test_intranode.py: received tokens x hidden x (1 + 4/128) B for FP8, 2 B for BF16,
# own rank included) are turned into bytes that cross a GPU's NVLink port (7/8 of them: 1/8 of a
# rank's tokens are its own) and timed as an alltoall of 8 ranks (bytes = the nccl-tests size per rank).
# Expected received tokens per rank: 8 x 4096 x (1 - C(224,8)/C(256,8)) (top-8 of 256 experts, 32 on
# the rank). H800 NVLink: 400 GB/s bidirectional per GPU (200 per direction).
p_rank = 1.0 - math.comb(224, 8) / math.comb(256, 8)
recv_tokens = 8 * 4096 * p_rank
DE = ("deepseek-ai/DeepEP README.md at 567632dd59810d77b3cc05553df953cc0f779799, Normal kernels with NVLink and RDMA "
      "forwarding, row \"Intranode | 8 | 153 GB/s (NVLink) | 8 | 158 GB/s (NVLink)\", %s %d GB/s over the bytes "
      "tests/test_intranode.py counts")
pts = []
for op, gbps, elt in (("dispatch", 153, 1 + 4 / 128), ("combine", 158, 2.0)):
    counted = recv_tokens * 7168 * elt
    t_us = counted / (gbps * 1e9) * 1e6
    pts.append({"kernel": "alltoall", "shape": {"size": round(counted), "nodes": 1, "line_GBps": 200},
                "dtype": "fp8" if op == "dispatch" else "bf16",
                "time_us": round(t_us, 4), "bytes": round(counted), "flops": 0, "ranks": 8, "link": "nvlink",
                "busbw_GBps": round(counted * 7 / 8 / (t_us * 1e-6) / 1e9, 3), "table": "deepep-h800-intranode",
                "source": DE % (op, gbps)})
write("published-deepep-h800.json",
      prov("NVIDIA H800 SXM5 (8 per node, NVLink 400 GB/s bidirectional)", 132, "DeepEP V1 normal kernels, "
           "intranode EP8 (NVLink-bound): achieved NVLink rate"), pts)

# HybridEP (NVIDIA's EP library, the flex dispatcher backend of the GB200 recipes) on NVLink 5: the figure
# "Performance test on GB200 NVL36, TOPK = 8" in NVIDIA/Megatron-LM
# docs/discussions/deepseek-v3-gb200-optimization/deepseek-v3-gb200-optimization.md (images/image6.png) at
# eb0783b6d35607ef1953eaca60b37b886b1a25d0, section 2.5: dispatch 714.66 and combine 657.72 GB/s
# uni-directional algorithm bandwidth with 32 CUDA blocks (the recipes' moe_hybridep_num_sms = 32), EP36
# in one NVLink domain. Algorithm bandwidth is taken as DeepEP's: the per-rank payload, own rank included,
# over the kernel time; 35/36 of it crosses the GPU's NVLink port (the alltoall busbw factor of 36 ranks).
# The figure does not state the payload: a per-rank payload of 4096 tokens x 8 copies x 7168 x 2 B is
# assumed (at that size the 3.3 us latency is below 0.01% of the time). NVLink 5: 1.8 TB/s bidirectional
# per GPU, 900 GB/s per direction (GB200 NVL72 datasheet); B200's 8-GPU NVSwitch domain has the same ports.
HY = ("NVIDIA/Megatron-LM docs/discussions/deepseek-v3-gb200-optimization/deepseek-v3-gb200-optimization.md at "
      "eb0783b6d35607ef1953eaca60b37b886b1a25d0, section 2.5 HybridEP, figure images/image6.png \"Performance test on "
      "GB200 NVL36, TOPK = 8\", 32 CUDA blocks: %s algorithm bandwidth %.2f GB/s (uni-direction)")
payload = 4096 * 8 * 7168 * 2
pts = []
for op, gbps in (("dispatch", 714.66), ("combine", 657.72)):
    t_us = payload / (gbps * 1e9) * 1e6
    pts.append({"kernel": "alltoall", "shape": {"size": payload, "nodes": 1, "line_GBps": 900}, "dtype": "bf16",
                "time_us": round(t_us, 4), "bytes": payload, "flops": 0, "ranks": 36, "link": "nvlink",
                "busbw_GBps": round(payload * 35 / 36 / (t_us * 1e-6) / 1e9, 3), "table": "hybridep-gb200-nvl36",
                "source": HY % (op, gbps)})
write("published-hybridep-gb200.json",
      prov("NVIDIA GB200 NVL72 (NVLink 5, 900 GB/s per direction per GPU)", 148, "HybridEP dispatch/combine on "
           "GB200 NVL36 with 32 CUDA blocks: achieved NVLink 5 rate"), pts)


# ---- cuDNN fused attention (what TransformerEngine 2.14.1 runs on Hopper and Blackwell: it prefers
# FusedAttention over FlashAttention on sm_90+, runs attention sinks and MLA's 192/128 head dims on
# cuDNN; TransformerEngine transformer_engine/pytorch/attention/dot_product_attention/utils.py at
# 366798ef (v2.14.1) l.720-728 and l.1168-1174). NVIDIA's own sweeps: NVIDIA/cudnn-frontend
# benchmark/sdpa_benchmark_training/results/<dir>/<file>.csv at 3929da2ef4c1dba1bb8acb68727b9134f26f40c0
# (benchmark_single_sdpa.py: CUDA-event time of one launch, 10 iterations), BF16 rows, non-deterministic
# backward except the H200 DeepSeek-V3 rows (deterministic_bwd=True, the only ones the file has).
# time_us is the CSV's time in ms x 1000; flops as cudnn-frontend counts them: 2 B Hq pairs (d_qk + d_v)
# forward, 2 B Hq pairs (3 d_qk + 2 d_v) backward, pairs S(S+1)/2 causal ("top_left"), S^2 "no_mask",
# W(W+1)/2 + (S - W) W under a sliding window W; bytes Q, K, V read and O written (forward; backward
# also dO read and dQ, dK, dV written), BF16, GQA: K and V with Hkv heads. Shape: batch, heads = Hq,
# seq, d_qk, d_v, causal, window (0 = none).
CUDNN = "NVIDIA/cudnn-frontend"
CUDNN_COMMIT = "3929da2ef4c1dba1bb8acb68727b9134f26f40c0"
# H200 (cuDNN 9.19.01): file, B, S, Hq, Hkv, d_qk, d_v, causal, window, fwd ms, bwd ms
CUDNN_H200 = [
    ("h200_919_only_cudnn/llama3.1_20260227_034703.csv", 1, 32768, 64, 8, 128, 128, 1, 0, 25.566, 75.688),
    ("h200_919_only_cudnn/llama3.1_20260227_034703.csv", 1, 32768, 64, 8, 128, 128, 0, 0, 50.769, 153.841),
    ("h200_919_only_cudnn/llama3.1_20260227_034703.csv", 1, 16384, 64, 8, 128, 128, 1, 0, 6.531, 19.002),
    ("h200_919_only_cudnn/llama3.1_20260227_034703.csv", 1, 16384, 64, 8, 128, 128, 0, 0, 12.524, 35.947),
    ("h200_919_only_cudnn/llama3.1_20260227_034703.csv", 1, 8192, 64, 8, 128, 128, 1, 0, 1.708, 5.083),
    ("h200_919_only_cudnn/llama3.1_20260227_034703.csv", 1, 8192, 64, 8, 128, 128, 0, 0, 3.182, 9.262),
    ("h200_919_only_cudnn/llama3.1_20260227_034703.csv", 1, 4096, 64, 8, 128, 128, 1, 0, 0.465, 1.45),
    ("h200_919_only_cudnn/llama3.1_20260227_034703.csv", 1, 4096, 64, 8, 128, 128, 0, 0, 0.819, 2.453),
    ("h200_919_only_cudnn/llama3.1_20260227_034703.csv", 1, 2048, 64, 8, 128, 128, 1, 0, 0.142, 0.464),
    ("h200_919_only_cudnn/llama3.1_20260227_034703.csv", 1, 2048, 64, 8, 128, 128, 0, 0, 0.217, 0.681),
    ("h200_919_only_cudnn/dsv3_20260227_034744.csv", 1, 8192, 128, 128, 192, 128, 1, 0, 4.278, 16.162),
    ("h200_919_only_cudnn/dsv3_20260227_034744.csv", 1, 4096, 128, 128, 192, 128, 1, 0, 1.148, 4.424),
    ("h200_919_only_cudnn/dsv3_20260227_034744.csv", 1, 2048, 128, 128, 192, 128, 1, 0, 0.33, 1.271),
    ("h200_919_only_cudnn/gpt_oss_20260227_034819.csv", 2, 32768, 64, 8, 64, 64, 1, 1024, 3.021, 9.045),
    ("h200_919_only_cudnn/gpt_oss_20260227_034819.csv", 2, 16384, 64, 8, 64, 64, 1, 1024, 1.499, 4.392),
    ("h200_919_only_cudnn/gpt_oss_20260227_034819.csv", 2, 8192, 64, 8, 64, 64, 1, 1024, 0.738, 2.149),
    ("h200_919_only_cudnn/gpt_oss_20260227_034819.csv", 2, 4096, 64, 8, 64, 64, 1, 1024, 0.358, 1.042),
    ("h200_919_only_cudnn/gpt_oss_20260227_034819.csv", 2, 2048, 64, 8, 64, 64, 1, 1024, 0.166, 0.488)]
# GB200 and GB300 (cuDNN 9.22.00): one row per pass; file, B, S, Hq, Hkv, d_qk, d_v, causal, window,
# forward ms and backward ms of the same configuration (two CSV rows)
CUDNN_BW = {
    "gb200": [("llama3.1/gb200/llama3.1_20260424_100750.csv", [
        (2, 32768, 64, 8, 128, 128, 1, 0, 21.692, 71.756), (2, 32768, 64, 8, 128, 128, 0, 0, 43.056, 139.364),
        (2, 16384, 64, 8, 128, 128, 1, 0, 5.15, 16.554), (2, 16384, 64, 8, 128, 128, 0, 0, 10.369, 32.014),
        (2, 8192, 64, 8, 128, 128, 1, 0, 1.397, 4.127), (2, 8192, 64, 8, 128, 128, 0, 0, 2.483, 7.831),
        (2, 4096, 64, 8, 128, 128, 1, 0, 0.391, 1.198), (2, 4096, 64, 8, 128, 128, 0, 0, 0.687, 2.037),
        (2, 2048, 64, 8, 128, 128, 1, 0, 0.125, 0.389), (2, 2048, 64, 8, 128, 128, 0, 0, 0.192, 0.611)]),
              ("dsv3/gb200/dsv3_20260424_101009.csv", [
        (2, 32768, 128, 128, 192, 128, 1, 0, 50.456, 212.546), (2, 32768, 128, 128, 192, 128, 0, 0, 111.031, 421.194),
        (2, 16384, 128, 128, 192, 128, 1, 0, 13.103, 50.424), (2, 16384, 128, 128, 192, 128, 0, 0, 24.27, 105.115),
        (2, 8192, 128, 128, 192, 128, 1, 0, 3.47, 11.984), (2, 8192, 128, 128, 192, 128, 0, 0, 6.249, 25.403),
        (2, 4096, 128, 128, 192, 128, 1, 0, 0.977, 3.383), (2, 4096, 128, 128, 192, 128, 0, 0, 1.65, 6.085),
        (2, 2048, 128, 128, 192, 128, 1, 0, 0.321, 1.056), (2, 2048, 128, 128, 192, 128, 0, 0, 0.461, 1.706)]),
              ("gpt_oss/gb200/gpt_oss_20260424_100011.csv", [
        (2, 32768, 128, 128, 64, 64, 1, 128, 2.634, 3.692), (2, 16384, 128, 128, 64, 64, 1, 128, 0.822, 1.818),
        (2, 8192, 128, 128, 64, 64, 1, 128, 0.414, 0.911), (2, 4096, 128, 128, 64, 64, 1, 128, 0.21, 0.465),
        (2, 2048, 128, 128, 64, 64, 1, 128, 0.109, 0.237)])],
    "gb300": [("llama3.1/gb300/llama3.1_20260424_100757.csv", [
        (2, 32768, 64, 8, 128, 128, 1, 0, 18.014, 59.024), (2, 32768, 64, 8, 128, 128, 0, 0, 38.317, 123.272),
        (2, 16384, 64, 8, 128, 128, 1, 0, 4.593, 14.593), (2, 16384, 64, 8, 128, 128, 0, 0, 8.734, 28.638),
        (2, 8192, 64, 8, 128, 128, 1, 0, 1.185, 3.832), (2, 8192, 64, 8, 128, 128, 0, 0, 2.181, 7.181),
        (2, 4096, 64, 8, 128, 128, 1, 0, 0.323, 1.101), (2, 4096, 64, 8, 128, 128, 0, 0, 0.579, 1.924),
        (2, 2048, 64, 8, 128, 128, 1, 0, 0.1, 0.356), (2, 2048, 64, 8, 128, 128, 0, 0, 0.152, 0.567)]),
              ("dsv3/gb300/dsv3_20260424_101002.csv", [
        (2, 32768, 128, 128, 192, 128, 1, 0, 44.189, 177.494), (2, 32768, 128, 128, 192, 128, 0, 0, 91.788, 366.969),
        (2, 16384, 128, 128, 192, 128, 1, 0, 11.178, 43.911), (2, 16384, 128, 128, 192, 128, 0, 0, 21.64, 91.189),
        (2, 8192, 128, 128, 192, 128, 1, 0, 3.013, 11.074), (2, 8192, 128, 128, 192, 128, 0, 0, 5.439, 21.973),
        (2, 4096, 128, 128, 192, 128, 1, 0, 0.864, 3.127), (2, 4096, 128, 128, 192, 128, 0, 0, 1.419, 5.641),
        (2, 2048, 128, 128, 192, 128, 1, 0, 0.268, 0.977), (2, 2048, 128, 128, 192, 128, 0, 0, 0.388, 1.6)]),
              ("gpt_oss/gb300/gpt_oss_20260424_100022.csv", [
        (2, 32768, 128, 128, 64, 64, 1, 128, 2.53, 3.45), (2, 16384, 128, 128, 64, 64, 1, 128, 0.79, 1.712),
        (2, 8192, 128, 128, 64, 64, 1, 128, 0.397, 0.862), (2, 4096, 128, 128, 64, 64, 1, 128, 0.202, 0.442),
        (2, 2048, 128, 128, 64, 64, 1, 128, 0.104, 0.227)])]}


def cudnn_pairs(s, causal, window):
    if window:
        return window * (window + 1) / 2 + (s - window) * window
    return s * (s + 1) / 2 if causal else s * s


def cudnn_point(direction, f, b, s, hq, hkv, dqk, dv, causal, window, ms, gpu, table):
    pairs = cudnn_pairs(s, causal, window)
    flops = 2.0 * b * hq * pairs * ((dqk + dv) if direction == "fwd" else (3 * dqk + 2 * dv))
    qo = b * hq * s * (dqk + dv) * 2.0
    kv = b * hkv * s * (dqk + dv) * 2.0
    bytes_ = qo + kv if direction == "fwd" else 2 * (qo + kv) + b * hq * s * dv * 2.0
    mask = "top_left" if causal else "no_mask"
    src = ("%s benchmark/sdpa_benchmark_training/results/%s at %s, row bfloat16 %s B=%d S=%d Hq=%d Hkv=%d d_qk=%d d_v=%d "
           "window=%s (%s): %s time %s ms" % (CUDNN, f, CUDNN_COMMIT, mask, b, s, hq, hkv, dqk, dv,
                                             window if window else "none", gpu, direction, ms))
    return {"kernel": "attention_" + direction, "shape": {"batch": b, "heads": hq, "seq": s, "d_qk": dqk, "d_v": dv,
            "causal": causal, "window": window}, "dtype": "bf16", "time_us": round(ms * 1000.0, 4),
            "bytes": bytes_, "flops": flops, "ranks": 1, "table": table, "source": src}


pts = []
for (f, b, s, hq, hkv, dqk, dv, c, w, fwd, bwd) in CUDNN_H200:
    model = f.split("/")[1].split("_2026")[0]
    pts.append(cudnn_point("fwd", f, b, s, hq, hkv, dqk, dv, c, w, fwd, "H200", "cudnn-h200-" + model))
    pts.append(cudnn_point("bwd", f, b, s, hq, hkv, dqk, dv, c, w, bwd, "H200", "cudnn-h200-" + model))
write("published-attention-cudnn-h200.json",
      prov("NVIDIA H200 SXM (SM90, cuDNN 9.19.01)", 132, "cudnn-frontend's SDPA training benchmark (NVIDIA): BF16 "
           "cuDNN fused attention forward and backward, Llama 3.1 (GQA d128), DeepSeek-V3 (MLA 192/128) and "
           "GPT-OSS (d64, sliding window 1024) shapes", peak_bf16=989, hbm=4800), pts)
for gpu, device, peak, sm in (("gb200", "NVIDIA GB200 (cuDNN 9.22.00)", 2500, 148),
                              ("gb300", "NVIDIA GB300 (cuDNN 9.22.00)", 2500, 160)):
    pts = []
    for f, rows in CUDNN_BW[gpu]:
        model = f.split("/")[0]
        for (b, s, hq, hkv, dqk, dv, c, w, fwd, bwd) in rows:
            pts.append(cudnn_point("fwd", f, b, s, hq, hkv, dqk, dv, c, w, fwd, gpu.upper(), "cudnn-%s-%s" % (gpu, model)))
            pts.append(cudnn_point("bwd", f, b, s, hq, hkv, dqk, dv, c, w, bwd, gpu.upper(), "cudnn-%s-%s" % (gpu, model)))
    write("published-attention-cudnn-%s.json" % gpu,
          prov(device, sm, "cudnn-frontend's SDPA training benchmark (NVIDIA): BF16 cuDNN fused attention forward and "
               "backward, Llama 3.1 (GQA d128), DeepSeek-V3 (MLA 192/128) and GPT-OSS (d64, 128 heads, sliding window "
               "128) shapes", peak_bf16=peak, hbm=8000), pts)


# ---- quantize kernels: memory-bound passes over a BF16 tensor (kernel "quantize": a cast, or a cast that
# also writes the transposed or column-wise copy; "quantize_rht_sr": NVFP4 with stochastic rounding, as
# gradients are cast). bytes = what the publisher counts, or (derived) the BF16 input read once and every
# output copy (elements + scales) written once.
def quant_point(kernel, rows, cols, t_us, bytes_, table, src):
    return {"kernel": kernel, "shape": {"rows": rows, "cols": cols}, "dtype": "fp8", "time_us": round(t_us, 4),
            "bytes": round(bytes_), "flops": 0, "ranks": 1, "table": table, "source": src}


# H100: torchao's blockwise FP8 (1x128 activations, 128x128 weights) Triton quantize kernels, CUDA-event
# median of the wrapper call; bytes = its "effective_logical_io_gbps" x kernel_us (pytorch/ao
# benchmarks/prototype/blockwise_fp8_training/README.md at 55c56d084f8b6b11e67422dfa73bf9c3b6cc17ae,
# "Current H100 Results", captured 2026-03-20 on "NVIDIA H100 80GB HBM3", 3352.3 GB/s peak)
TAO = ("pytorch/ao benchmarks/prototype/blockwise_fp8_training/README.md at 55c56d084f8b6b11e67422dfa73bf9c3b6cc17ae, "
       "Current H100 Results, row %s | %s | %.2f us | %.1f GB/s")
pts = []
for name, shape, us, gbps in [("act_quant_transposed_lhs", "32768x4096", 154.46, 2633.9),
                              ("weight_quant_transposed_rhs", "32768x4096", 150.53, 2675.2),
                              ("act_quant_lhs", "32768x4096", 150.86, 2696.8), ("act_quant_rhs", "32768x4096", 148.70, 2736.0),
                              ("weight_quant_rhs", "32768x4096", 144.99, 2777.3),
                              ("weight_quant_transposed_rhs", "131072x4096", 581.89, 2768.1),
                              ("act_quant_lhs", "131072x4096", 586.98, 2772.5),
                              ("act_quant_transposed_lhs", "131072x4096", 581.47, 2798.7),
                              ("act_quant_rhs", "131072x4096", 562.56, 2892.8), ("weight_quant_rhs", "131072x4096", 555.30, 2900.7)]:
    r, c = (int(x) for x in shape.split("x"))
    pts.append(quant_point("quantize", r, c, us, gbps * 1e9 * us * 1e-6, "torchao-h100-blockwise-quant",
                           TAO % (name, shape, us, gbps)))
write("published-quantize-h100.json",
      prov("NVIDIA H100 80GB HBM3 (SXM)", 132, "torchao's blockwise FP8 quantize kernels on H100 (achieved HBM rate)",
           peak_bf16=989, hbm=3350), pts)

# B200: TransformerEngine's MXFP8 quantize (BF16 8192 x 8192; row-wise 1x32, column-wise 32x1 or both copies
# with E8M0 scales), the "B200 (us)" column of ROCm/TransformerEngine pull request #598 (merged 2026-05-27)
# description, table CAST_ONLY. bytes (derived): 2 B per element read, 1 + 1/32 B per element and copy
# written. TE pull request #2634's 512-row shapes (8.4-9.3 us) time a Python call per quantization
# (host-launch-bound, "launch-bound at roughly 8-10 us"): the host side's to price, not imported.
ROCM598 = ("ROCm/TransformerEngine pull request #598 (2026-05-27) description, Single Kernel Optimization Results, "
           "CAST_ONLY, row BF16 | %s | 8192x8192, column B200 (us): %.2f")
pts = []
n = 8192 * 8192
for scaling, us, copies in (("rowwise", 34.84, 1), ("colwise", 39.61, 1), ("both", 52.34, 2)):
    pts.append(quant_point("quantize", 8192, 8192, us, 2.0 * n + copies * n * (1 + 1 / 32), "te-b200-mxfp8-quant",
                           ROCM598 % (scaling, us)))
write("published-quantize-b200.json",
      prov("NVIDIA B200 (HBM3e 8 TB/s)", 148, "TransformerEngine's MXFP8 quantize kernel on B200 (achieved HBM rate)",
           peak_bf16=2250, hbm=8000), pts)

# B300: TransformerEngine's tuned NVFP4 cast (BF16 in, row-wise and column-wise copies, E4M3 scales per 16),
# NVIDIA/TransformerEngine pull request #2412 (2025-11-21) description: "RN: round-to-nearest mode 6.4 TB/s",
# "SR: stochastic rounding 4.5 TB/s" (row-wise + column-wise), measured on B300 at DeepSeek-V3's
# [8192 x 8, 7168]. Times derived at that shape with bytes = 2 B per element read, 2 x (0.5 + 1/16) B written
# (the PR does not state its byte count).
TE2412 = ("NVIDIA/TransformerEngine pull request #2412 (2025-11-21) description, tuned NVFP4 cast on B300, rowwise + "
          "colwise, %s: %.1f TB/s (time derived at 65536 x 7168)")
pts = []
n = 65536 * 7168
b = 2.0 * n + 2 * n * (0.5 + 1 / 16)
pts.append(quant_point("quantize", 65536, 7168, b / 6.4e12 * 1e6, b, "te-b300-nvfp4-cast", TE2412 % ("round-to-nearest", 6.4)))
pts.append(quant_point("quantize_rht_sr", 65536, 7168, b / 4.5e12 * 1e6, b, "te-b300-nvfp4-cast",
                       TE2412 % ("stochastic rounding", 4.5)))
write("published-quantize-b300.json",
      prov("NVIDIA B300 (HBM3e 8 TB/s)", 160, "TransformerEngine's NVFP4 cast kernel on B300 (achieved HBM rate)",
           peak_bf16=2250, hbm=8000), pts)
