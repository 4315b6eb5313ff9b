#!/usr/bin/env python3
"""host_probe_torch.py -- the framework side of a step's host cost, measured in PyTorch on one GPU.

moesim's host model (sim/plan/host_costs.h) prices an op as framework calls x call_s + kernel launches
x launch_s. `simcal probe-host` measures the CUDA side (launches, graphs, syncs); this measures what a
PyTorch program pays per call, on the same machine, when the GPU is kept busy (torch.cuda._sleep) so
that the host never waits for it:
  eager_op_us         an in-place op on a small tensor, no autograd
  autograd_fwd_us     an op recorded by autograd (a chain of 100 multiplications)
  autograd_bwd_us     its backward node (the chain's backward / 100)
  module_call_us      nn.Linear(64, 64) forward, autograd on
  item_us             .item() of a device scalar on an idle GPU (a host sync's round trip)
  sustained_bf16      8192^3 BF16 matmuls back to back for SECONDS: TFLOP/s in the first second and
                      over the last five (a GPU held at its power limit runs slower than in a burst)
Writes one JSON document ("moesim-torch-probe/1"). Exit 1 without torch or a GPU.
Usage: python3 tools/host_probe_torch.py --out FILE [--seconds S]
"""
import argparse
import datetime
import json
import platform
import sys
import time


def best_per_call(fn, calls, repeats, busy):
    """Best over `repeats` of (host time of `calls` calls) / calls, each batch behind a GPU spin."""
    import torch
    best = float("inf")
    for _ in range(repeats):
        torch.cuda._sleep(busy)
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        best = min(best, (t1 - t0) / calls)
    return best * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=15.0, help="length of the sustained GEMM run")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("host_probe_torch: no torch here", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("host_probe_torch: no GPU", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    busy = int(20e-3 * 1.98e9)   # ~20 ms of spin at an H200's boost clock: longer than any timed batch
    out = {"format": "moesim-torch-probe/1",
           "provenance": {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                          "cuda": torch.version.cuda, "python": platform.python_version(),
                          "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                          "method": "host time (time.perf_counter) per call, best of 30 batches, each batch "
                                    "queued behind torch.cuda._sleep so that no call waits for the GPU"}}
    x = torch.ones(256, device=dev)
    for _ in range(50):
        x.add_(1)
    torch.cuda.synchronize()
    with torch.no_grad():
        out["eager_op_us"] = best_per_call(lambda: x.add_(1), 200, 30, busy)

    w = torch.ones(256, device=dev, requires_grad=True)

    def chain():
        y = w
        for _ in range(100):
            y = y * 1.0001
        return y

    out["autograd_fwd_us"] = best_per_call(chain, 1, 30, busy) / 100
    bwd = float("inf")
    for _ in range(30):
        y = chain().sum()
        torch.cuda.synchronize()
        torch.cuda._sleep(busy)
        t0 = time.perf_counter()
        y.backward()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        bwd = min(bwd, (t1 - t0) / 100)
    out["autograd_bwd_us"] = bwd * 1e6
    lin = torch.nn.Linear(64, 64, device=dev, dtype=torch.bfloat16)
    xin = torch.ones(16, 64, device=dev, dtype=torch.bfloat16, requires_grad=True)
    out["module_call_us"] = best_per_call(lambda: lin(xin), 100, 30, busy)
    s = torch.ones((), device=dev)
    torch.cuda.synchronize()
    item = float("inf")
    for _ in range(200):
        t0 = time.perf_counter()
        s.item()
        item = min(item, time.perf_counter() - t0)
    out["item_us"] = item * 1e6

    # sustained BF16 GEMM: windows of ~1 s of back-to-back 8192^3 matmuls
    n = 8192
    A = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    B = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    C = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
    torch.matmul(A, B, out=C)
    torch.cuda.synchronize()
    flop = 2.0 * n * n * n
    windows = []
    t_start = time.perf_counter()
    while time.perf_counter() - t_start < a.seconds:
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        k = 0
        while k < 400:
            torch.matmul(A, B, out=C)
            k += 1
            if k % 50 == 0 and time.perf_counter() - t_start > a.seconds:
                break
        e1.record()
        e1.synchronize()
        windows.append(k * flop / (e0.elapsed_time(e1) * 1e-3) / 1e12)
    last = windows[-5:] if len(windows) >= 6 else windows[1:] or windows
    out["sustained_bf16"] = {"m": n, "n": n, "k": n, "seconds": a.seconds, "window_tflops": windows,
                             "first_window_tflops": windows[0], "last_windows_mean_tflops": sum(last) / len(last)}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps({k: v for k, v in out.items() if k != "sustained_bf16"}, indent=1))
    print("sustained BF16 8192^3: first window %.0f TFLOP/s, last %.0f TFLOP/s"
          % (windows[0], out["sustained_bf16"]["last_windows_mean_tflops"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
