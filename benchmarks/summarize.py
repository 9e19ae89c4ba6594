#!/usr/bin/env python3
"""Turns bench.jsonl (cuimg and anchor JSON lines) into a Markdown table for BENCHMARKS.md.
Anchor workloads are named "<anchor>_<workload>"; those matching a cuimg workload share its row."""
import json
import sys


def main(jsonl_path, device_path=None):
    rows, anchors, device, errors, rpcs, transports, multi = {}, {}, {}, [], [], [], []
    split = None  # transport_bench's CPU split, when it made one
    soaks = []
    stagings = []
    papers = []
    pyclients = []  # rpc_bench's Python client rows (impl "python_client")
    batches = []  # detect_bench's plans of several frames (impl "cuimg_batch")
    checks = []  # (workload, who, verdict): cuimg "check" fields, anchors' "max_abs_diff"
    for line in open(jsonl_path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "error" in item:
            errors.append(item)
        elif item.get("impl") == "device":
            device = item
        elif item.get("impl") == "rpc" and "error" not in item:
            rpcs.append(item)
        elif item.get("impl") == "transport" and "cpu_split" in item:
            split = item["cpu_split"]
        elif item.get("impl") == "transport":
            transports.append(item)
        elif item.get("impl") == "multi_gpu":
            multi.append(item)
        elif item.get("impl") == "soak":
            soaks.append(item)
        elif item.get("impl") == "staging":
            stagings.append(item)
        elif item.get("impl") == "python_client":
            pyclients.append(item)
        elif item.get("impl") == "paper":
            papers.append(item)
        elif item.get("impl") == "cuimg_batch":
            batches.append(item)
            checks.append((f"{item['workload']} x{item['frames']}", "cuimg batch", item["check"]))
        elif item.get("impl") == "cuimg":
            rows[item["workload"]] = item
            if "check" in item:
                checks.append((item["workload"], "cuimg", item["check"]))
        elif "anchor" in item and "median_us" in item:
            name = item["workload"]
            prefix = item["anchor"] + "_"
            key = name[len(prefix) :] if name.startswith(prefix) else name
            anchors.setdefault(key, {})[item["anchor"]] = item["median_us"]
            if "max_abs_diff" in item:
                checks.append((key, item["anchor"], f"max |diff| {item['max_abs_diff']}"))
    if device_path:
        print("```")
        print(open(device_path).read().strip())
        print("```")
    if device:
        print(
            f"\nDevice: {device['name']} ({device['sms']} SMs), measured copy bandwidth "
            f"{device['copy_bandwidth_gbps']:.0f} GB/s (read+write), {device['runtime']}.\n"
        )
    names = sorted({a for v in anchors.values() for a in v})
    header = (
        "| workload | cuimg median µs | floor µs | × floor | launches | "
        + " | ".join(f"{a} µs | {a}/cuimg" for a in names)
        + " |"
    )
    print(header)
    print("|" + "---|" * (5 + 2 * len(names)))
    for key, r in rows.items():
        cells = [
            key,
            f"{r['median_us']:.1f}",
            f"{r['floor_us']:.1f}",
            f"{r['x_floor']:.1f}",
            str(r["launches"]),
        ]
        for a in names:
            t = anchors.get(key, {}).get(a)
            cells += [f"{t:.1f}", f"{t / r['median_us']:.1f}×"] if t else ["–", "–"]
        print("| " + " | ".join(cells) + " |")
    plans = {k: r["plan"] for k, r in rows.items() if r.get("plan")}
    if plans:
        print("\nPlans:\n")
        for key, plan in plans.items():
            print(f"- {key}: {plan}")
    if checks:
        print("\nResult checks (cuimg vs its CPU reference; anchors vs a host computation):\n")
        for key, who, verdict in checks:
            print(f"- {key}: {who} {verdict}")
    stages = {k: r for k, r in rows.items() if "blocks_us" in r}
    if stages:
        print(
            "\nDetection stages (each timed alone; GPU µs) and checks against the CPU reference:\n"
        )
        for key, r in stages.items():
            print(
                f"- {key}: blocks {r['blocks_us']:.1f}, scores {r['scores_us']:.1f}, all "
                f"{r['median_us']:.1f} in {r['launches']} launches; {r['levels']} levels, "
                f"{r['windows']} windows, raw hits {r['raw_hits']} "
                f"(reference {r['reference_raw_hits']}), "
                f"detections {r['detections']} (reference {r['reference_detections']}), precision "
                f"{r['precision']:.4f} recall {r['recall']:.4f}, input {r['input']}"
            )
    if batches:
        print("\nDetection in batches (one launch pair for every frame; GPU µs):\n")
        print(
            "| workload | frames | launch pair | a frame | blocks a frame | scores a frame "
            "| check |"
        )
        print("|---|---|---|---|---|---|---|")
        for b in batches:
            print(
                f"| {b['workload']} | {b['frames']} | {b['median_us']:.1f} | "
                f"{b['per_frame_us']:.1f} | {b['blocks_per_frame_us']:.1f} | "
                f"{b['scores_per_frame_us']:.1f} | {b['check']} |"
            )
    for p in papers:
        r = rows.get(p["workload"])
        ours = (
            f"; cuimg {r['median_us']:.1f} µs here ({p['gpu_us'] / r['median_us']:.0f}× faster)"
            if r
            else ""
        )
        cpu = [
            f"{p[k] / 1e3:.0f} ms ({label})"
            for k, label in (
                ("cpu1_us", "1 core"),
                ("cpu4_us", "4 cores"),
                ("cpu_us", "cores not stated"),
            )
            if k in p
        ]
        print(
            f"\nPublished ({p['source']}): {p['gpu_us'] / 1e3:.2f} ms on {p['gpu_hardware']}, "
            f"CPU {', '.join(cpu)}{ours}."
        )
    if rpcs:
        print("\nEnd-to-end RPC (Python grpcio client on the same host):\n")
        print(
            "| workload | backend | HTTP/2 lookahead | payload MB | round trip median ms | "
            "server total µs | h2d µs | kernel µs | d2h µs |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for r in (r for r in rpcs if "server_us" in r):
            s = r["server_us"]
            lookahead = r.get("lookahead_bytes", 0)
            lookahead = f"{lookahead >> 20} MiB" if lookahead else "default"
            print(
                f"| {r['workload']} | {r['backend']} | {lookahead} | {r['payload_mb']} | "
                f"{r['median_ms']} | "
                f"{s.get('total_us', 0):.0f} | {s.get('h2d_us', 0):.0f} | "
                f"{s.get('kernel_us', 0):.0f} | {s.get('d2h_us', 0):.0f} |"
            )
        for r in (r for r in rpcs if "frames_per_s" in r):
            print(
                f"\n{r['workload']} ({r['backend']}, C++ client, {r['frames']} frames): "
                f"round trip p50 {r['median_ms']} ms, p99 {r['p99_ms']} ms, "
                f"{r['frames_per_s']} frames/s."
            )
        for r in (r for r in rpcs if "throughput_fps" in r):
            print(
                f"\n{r['workload']} under load ({r['backend']}): "
                f"{r['concurrency']} calls in flight, {r['throughput_fps']} frames/s, "
                f"p50 {r['p50_ms_loaded']} ms, p99 {r['p99_ms_loaded']} ms."
            )
    if pyclients:
        print("\nPython client (cuimg.Client, NumPy array in and out), unary vs streamed:\n")
        print("| workload | backend | payload MB | round trip median ms | streams | result slabs |")
        print("|---|---|---|---|---|---|")
        for r in (r for r in pyclients if "median_ms" in r):
            print(
                f"| {r['workload']} | {r['backend']} | {r['payload_mb']} | {r['median_ms']} | "
                f"{r.get('streams', 1 if r['workload'].endswith('_unary') else '?')} | "
                f"{r.get('slabs', '-')} |"
            )
        for r in (r for r in pyclients if "equal" in r):
            print(f"\n{r['workload']}: {'bit for bit' if r['equal'] else 'DIFFERENT'}.")
    for r in soaks:
        per_rpc = ", ".join(f"{k} {v['ok']}" for k, v in r["per_rpc"].items())
        print(
            f"\nSoak ({r['backend']}): {r['ok']} of {r['calls']} mixed calls ok in "
            f"{r['seconds']} s "
            f"({per_rpc}); server RSS {r['rss_after_warmup_mb']} MiB after warm-up, "
            f"{r['rss_end_mb']} MiB at the end (max {r['rss_max_mb']}); device memory used "
            f"{r['device_used_after_warmup_mb']} -> {r['device_used_end_mb']} MiB "
            f"(max {r['device_used_max_mb']})."
        )
        if "rss_quarters_mb" in r:
            print(
                f"At each quarter of the run: RSS {r['rss_quarters_mb']} MiB, of which pinned "
                f"staging {r['pinned_staging_quarters_mb']} MiB; device memory used "
                f"{r['device_used_quarters_mb']} MiB."
            )
    if multi:
        print("\nScale-up over the host's GPUs (cuimg load, GPU-bound Morphology):\n")
        print("| workload | GPUs | requests/s | p50 ms | p99 ms | in flight |")
        print("|---|---|---|---|---|---|")
        for r in (r for r in multi if "throughput_rps" in r):
            print(
                f"| {r['workload']} | {r['devices']} | {r['throughput_rps']} | {r['p50_ms']:.2f} | "
                f"{r['p99_ms']:.2f} | {r['concurrency']} |"
            )
        for r in (r for r in multi if "scaling" in r):
            print(f"\n{r['devices']} GPUs vs 1: {r['scaling']}x throughput (target >= 1.8x).")
    if transports:
        print(
            "\nService vs its transport floor (echo server with the same gRPC settings; C++ "
            "client on the same host; transport_bench):\n"
        )
        if split:
            print(f"Servers on CPUs {split['servers']}, the client on {split['driver']}.\n")
        print("| settings | workload | echo | cuimg | cuimg/echo (target) | more |")
        print("|---|---|---|---|---|---|")
        for t in transports:
            w = t["workload"]
            if w.startswith("unary_"):
                cells = [
                    f"p50 {t['echo_p50_us']:.0f} µs",
                    f"p50 {t['cuimg_p50_us']:.0f} µs",
                    f"{t['ratio']:.2f} (≤ {t['target_ratio']})",
                    f"server overhead p50 {t['server_overhead_p50_us']:.0f} µs "
                    f"(≤ {t['target_overhead_us']}), copies+kernel "
                    f"{t['server_copies_kernel_p50_us']:.0f} µs",
                ]
            elif w.startswith("shm_"):
                cells = [
                    f"(inline cuimg p50 {t['inline_p50_us']:.0f} µs, echo {t['echo_p50_us']:.0f}; "
                    "echo of the request's size p50 "
                    f"{t.get('echo_request_size_p50_us', 0):.0f} µs)",
                    f"p50 {t['cuimg_p50_us']:.0f} µs through shared memory",
                    f"target p50 ≤ {t['target_p50_us']} µs",
                    f"{t['check']}; p99 {t['cuimg_p99_us']:.0f} µs; server overhead p50 "
                    f"{t['server_overhead_p50_us']:.0f} µs, copies+kernel "
                    f"{t['server_copies_kernel_p50_us']:.0f} µs; region page-locked: "
                    f"{t['device_mapped']}",
                ]
            elif w.startswith("load_"):
                cells = [
                    f"{t['echo_rps']:.0f} req/s",
                    f"{t['cuimg_rps']:.0f} req/s",
                    f"{t['ratio']:.2f} (≥ {t['target_ratio']})",
                    f"{t['concurrency']} in flight on {t['channels']} channels "
                    f"({t.get('load_api', 'sync')} client); cuimg p99 "
                    f"{t['cuimg_p99_ms']:.2f} ms (≤ {t['target_p99_ms']}); echo p99 "
                    f"{t['echo_p99_ms']:.2f} ms"
                    + (
                        f"; cuimg p50 {t['cuimg_p50_ms']:.2f} ms, of it waiting for a worker "
                        f"{t['cuimg_queue_p50_us'] / 1e3:.2f} ms, handler to reply "
                        f"{t['cuimg_server_p50_us'] / 1e3:.2f} ms"
                        if "cuimg_queue_p50_us" in t
                        else ""
                    ),
                ]
            elif "streams" in t:
                cells = [
                    f"{t['echo_ms']:.1f} ms (1 MiB chunks, one stream)",
                    f"{t['cuimg_ms']:.1f} ms ({t['slab_slices']}-slice slabs over "
                    f"{t['streams']} streams)",
                    f"{t['ratio']:.2f} (< 1; cuimg ≤ {t['target_ms']} ms)",
                    f"{t['check']}; slowest stream's server time {t['server_total_ms']:.1f} ms"
                    + (
                        f"; {t['resent_streams']} streams sent again"
                        if t.get("resent_streams")
                        else ""
                    ),
                ]
            else:
                cells = [
                    f"{t['echo_ms']:.1f} ms (1 MiB chunks)",
                    f"{t['cuimg_ms']:.1f} ms ({t['slab_slices']}-slice slabs)",
                    f"{t['ratio']:.2f} (< 1; cuimg ≤ {t['target_ms']} ms)",
                    f"{t['check']}; server {t['server_total_ms']:.1f} ms, stages summed over "
                    f"slabs / wall {t['stage_overlap']:.2f}",
                ]
            print(f"| {t['settings']} | {w} | " + " | ".join(cells) + " |")
    if stagings:
        print(
            "\nHost<->device copies of pageable request memory: direct vs staged through pinned "
            "chunks (staging_bench; host wall time, median):\n"
        )
        print(
            "| workload | direction | MB | pageable µs (GB/s) | staged µs (GB/s) | speedup | "
            "round trip equal |"
        )
        print("|---|---|---|---|---|---|---|")
        for s in stagings:
            print(
                f"| {s['workload']} | {s['direction']} | {s['bytes'] / 1e6:.1f} | "
                f"{s['pageable_us']:.0f} ({s['pageable_gbps']:.1f}) | "
                f"{s['staged_us']:.0f} ({s['staged_gbps']:.1f}) | {s['speedup']:.2f}× | "
                f"{s['round_trip_equal']} |"
            )
    others = {k: v for k, v in anchors.items() if k not in rows}
    if others:
        print("\nAnchors without a cuimg row:\n")
        for key, v in sorted(others.items()):
            print(f"- {key}: " + ", ".join(f"{a} {t:.1f} µs" for a, t in sorted(v.items())))
    if errors:
        print("\nErrors:\n")
        for e in errors:
            name = e.get("anchor", e.get("impl", "?"))
            print(f"- {name} {e.get('workload', e.get('settings', ''))}: {e['error'][:200]}")


if __name__ == "__main__":
    main(*sys.argv[1:])
