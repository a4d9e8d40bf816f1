#!/usr/bin/env python3
"""Writes models/collectives.json from AIConfigurator's measured collective tables.

Usage: scripts/fit-collectives.py OPDATA_AIC_DIR > models/collectives.json
       scripts/fit-collectives.py OPDATA_AIC_DIR --report     (the fit errors docs/collectives.md quotes)

OPDATA_AIC_DIR is AIConfigurator's systems/data tree as CSV (ai-dynamo/aiconfigurator, Apache-2.0).
Sizes: AIConfigurator's `message_size` counts bf16/half elements (collector/collect_all_reduce.py
builds a [tokens, 4096] tensor of `size` elements; collect_nccl.py divides nccl-tests' bytes by 2),
so bytes = 2 x message_size. Standard library only.
"""
import csv, json, math, sys

DEVICES = {  # kvplan device id -> (AIC folder, vLLM tables, NCCL version)
    "h100-sxm": ("h100_sxm", "vllm-0.19.0", "nccl-2.29.2"),
    "h200": ("h200_sxm", "vllm-0.19.0", "nccl-2.29.2"),
    "b200": ("b200_sxm", "vllm-0.19.0", "nccl-2.29.2"),
    "a100-sxm-80gb": ("a100_sxm", "vllm-0.14.0", "nccl-2.27.3"),
    "l40s": ("l40s", "vllm-0.22.0", "nccl-2.27.3"),
}
FAMILY = {"h100-sxm": "nvlink", "h200": "nvlink", "b200": "nvlink", "a100-sxm-80gb": "nvlink", "l40s": "pcie"}
LINK = {"h100-sxm": 450e9, "h200": 450e9, "b200": 900e9, "a100-sxm-80gb": 300e9, "l40s": 32e9}  # models/gpus.json
MAX_BYTES = 256e6  # beyond any step's all-reduce (16,384 tokens x 8,192 hidden x 2 B)


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def allreduce_grid(root, dev):
    folder, vllm, _ = DEVICES[dev]
    out = {}
    for r in rows(f"{root}/{folder}/{vllm}/custom_allreduce_perf.csv"):
        b = 2 * int(r["message_size"])
        if r["backend"] == "vllm_graph" and b <= MAX_BYTES:
            out.setdefault(int(r["num_gpus"]), []).append((b, float(r["latency"]) * 1e-3))
    return {n: sorted(v) for n, v in out.items()}


def nccl_points(root, dev, op):
    folder, _, nccl = DEVICES[dev]
    out = {}
    for r in rows(f"{root}/{folder}/{nccl}/nccl_perf.csv"):
        b = 2 * int(r["message_size"])
        if r["op_name"] == op and r["nccl_dtype"] == "half" and b <= MAX_BYTES:
            out.setdefault(int(r["num_gpus"]), []).append((b, float(r["latency"]) * 1e-3))
    return {n: sorted(v) for n, v in out.items()}


def loss(pts, lat, bw):
    return sum(abs(math.log((lat + b / bw) / t)) for b, t in pts) / len(pts)


def golden(f, a, b, it=60):
    g = (math.sqrt(5) - 1) / 2
    for _ in range(it):
        c, d = b - g * (b - a), a + g * (b - a)
        if f(c) < f(d):
            b = d
        else:
            a = c
    return (a + b) / 2


def fit(pts):
    """latency + bytes / bandwidth minimising the mean |ln(predicted / measured)|."""
    def best(bw):
        lat = golden(lambda L: loss(pts, L, bw), 0.0, 2e-3)
        return lat, loss(pts, lat, bw)
    bw = 10 ** golden(lambda x: best(10 ** x)[1], 8, 13.5)
    return best(bw)[0], bw


def fit_family(sets):
    """latency + bytes / (fraction x datasheet link) over several devices' points."""
    pts = [(b / LINK[d], t, d) for d, p in sets for b, t in p]  # b / link: seconds at the datasheet rate
    def l(lat, frac):
        return sum(abs(math.log((lat + s / frac) / t)) for s, t, _ in pts) / len(pts)
    def best(frac):
        lat = golden(lambda L: l(L, frac), 0.0, 2e-3)
        return lat, l(lat, frac)
    frac = 10 ** golden(lambda x: best(10 ** x)[1], -3, 0.3)
    return best(frac)[0], frac


def rel_errors(pts, lat, bw):
    e = [abs((lat + b / bw) / t - 1) for b, t in pts]
    return sum(e) / len(e), max(e)


def sig(x, n=3):
    return float(f"{x:.{n}g}")


def main():
    root = sys.argv[1]
    report = "--report" in sys.argv
    grids = {d: allreduce_grid(root, d) for d in DEVICES}
    nccl = {(d, op): nccl_points(root, d, op) for d in DEVICES for op in ("all_gather", "reduce_scatter")}
    out = {
        "schema_version": 1,
        "description": "Measured collectives (docs/collectives.md): vLLM's TP all-reduce as it runs under CUDA graphs "
        "(custom all-reduce below its 8 MiB limit, NCCL above) as a grid of message bytes -> seconds per device and GPU count; "
        "NCCL all-gather and reduce-scatter as fitted latency + bytes / bandwidth; and per link family the same form with the "
        "bandwidth a fraction of the device's datasheet link, for devices without tables.",
        "source": "NVIDIA AIConfigurator, ai-dynamo/aiconfigurator @095f58a51, aic-core/src/aiconfigurator_core/systems/data/"
        "<gpu>/{vllm,nccl}/<version>/{custom_allreduce_perf,nccl_perf}.parquet; Apache-2.0, notice in models/LICENSE.aiconfigurator. "
        "Derived by scripts/fit-collectives.py.",
        "allreduce": [],
        "nccl": [],
        "families": [],
    }
    stats = []
    for d, g in grids.items():
        folder, vllm, _ = DEVICES[d]
        for n, pts in sorted(g.items()):
            out["allreduce"].append({"device": d, "engine": "vllm", "version": vllm.split("-")[1], "gpus": n,
                                     "bytes": [b for b, _ in pts], "latency_s": [sig(t, 4) for _, t in pts]})
    for (d, op), g in nccl.items():
        for n, pts in sorted(g.items()):
            lat, bw = fit(pts)
            mean, mx = rel_errors(pts, lat, bw)
            out["nccl"].append({"device": d, "op": op, "version": DEVICES[d][2].split("-")[1], "gpus": n,
                                "latency_s": sig(lat), "bytes_per_s": sig(bw)})
            stats.append(("nccl", d, op, n, mean, mx))
    # Families: every op, every GPU count; NVLink pooled over its devices, PCIe from the L40S alone.
    for fam in ("nvlink", "pcie"):
        devs = [d for d in DEVICES if FAMILY[d] == fam]
        for op in ("all_reduce", "all_gather", "reduce_scatter"):
            for n in (2, 4, 8):
                src = (lambda d: grids[d][n]) if op == "all_reduce" else (lambda d: nccl[(d, op)][n])
                lat, frac = fit_family([(d, src(d)) for d in devs])
                out["families"].append({"link": fam, "op": op, "gpus": n, "latency_s": sig(lat), "link_fraction": sig(frac),
                                        "fitted_on": ", ".join(devs)})
                for d in devs:
                    ins = rel_errors(src(d), lat, frac * LINK[d])
                    if len(devs) > 1:
                        others = [(o, src(o)) for o in devs if o != d]
                        l2, f2 = fit_family(others)
                        loo = rel_errors(src(d), l2, f2 * LINK[d])
                    else:
                        loo = (float("nan"), float("nan"))
                    stats.append(("family", d, op, n, ins[0], ins[1], loo[0], loo[1]))
    if report:
        for s in stats:
            print(" ".join(str(round(x * 100, 1)) + "%" if isinstance(x, float) else str(x) for x in s))
        return
    # One entry a line: the file stays short enough to read.
    lines = ["{"]
    keys = list(out)
    for i, k in enumerate(keys):
        end = "," if i < len(keys) - 1 else ""
        if isinstance(out[k], list):
            items = [json.dumps(e) for e in out[k]]
            lines.append(f' "{k}": [\n  ' + ",\n  ".join(items) + f"\n ]{end}")
        else:
            lines.append(f' "{k}": {json.dumps(out[k])}{end}')
    lines.append("}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
