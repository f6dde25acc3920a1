"""Medians, ratios, the Markdown table, the chart and the JSON record of a bench run."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

MIB = 2**20
CLIENT_LABELS = {"python": "ours (Python)", "cpp": "ours (C++)", "java": "Java client"}


def size_label(size: int) -> str:
    return f"{size // 1024} KiB" if size >= 1024 else f"{size} B"


def figures(record: dict[str, Any]) -> dict[str, float]:
    """msg/s, MiB/s, CPU seconds per million messages, peak RSS of one run."""
    elapsed, count = record["elapsed_s"], record["count"]
    return {
        "msg_s": count / elapsed,
        "mib_s": record["bytes"] / MIB / elapsed,
        "cpu_s_per_m": record["cpu_s"] / count * 1e6,
        "rss_mib": record["peak_rss_mib"],
    }


def one_line(record: dict[str, Any]) -> str:
    f = figures(record)
    text = (
        f"{record['workload']:<20} {record['client']:<7} {f['msg_s']:>9,.0f} msg/s "
        f"{f['mib_s']:>7.1f} MiB/s {f['cpu_s_per_m']:>7.1f} CPU s/M {f['rss_mib']:>6.0f} MiB"
    )
    if record.get("latency_ms"):
        lat = record["latency_ms"]
        text += f"  p50 {lat['p50']:.1f} p99 {lat['p99']:.1f} max {lat['max']:.1f} ms"
    return text


def medians(runs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    """(workload, client) -> median of each figure over the measured rounds."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in runs:
        if record["round"] > 0:  # round 0 is the warm-up
            grouped[(record["workload"], record["client"])].append(record)
    out = {}
    for key, records in grouped.items():
        per_run = [figures(r) for r in records]
        row = {name: statistics.median(f[name] for f in per_run) for name in per_run[0]}
        latencies = [r["latency_ms"] for r in records if r.get("latency_ms")]
        for q in ("p50", "p95", "p99", "max"):
            if latencies:
                row[q] = statistics.median(lat[q] for lat in latencies)
        row["rounds"] = len(records)
        out[key] = row
    return out


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def markdown(meta: dict[str, Any], table: dict[tuple[str, str], dict[str, float]]) -> str:
    workloads = list(dict.fromkeys(workload for workload, _ in table))
    lines = [
        f"# Benchmark {meta['started']}",
        "",
        f"`python -m bench{' --quick' if meta['quick'] else ''} --rounds {meta['rounds']}`; "
        f"medians of {meta['rounds']} measured rounds after a warm-up, clients interleaved; "
        f"{meta['cpus']} CPUs shared with other work (load average at the end "
        f"{meta['load_average'][0]:.1f}); cluster {meta['cluster']}.",
        "",
        "msg/s and MiB/s over the timed section; CPU = process CPU time (all threads) over "
        "that section per million messages; RSS = the process's peak (ru_maxrss).",
        "",
        "| workload | client | msg/s | MiB/s | CPU s/M msgs | peak RSS MiB |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for workload in workloads:
        if workload.startswith("latency"):
            continue
        for client in CLIENT_LABELS:
            row = table.get((workload, client))
            if row:
                lines.append(
                    f"| {workload} | {CLIENT_LABELS[client]} | {row['msg_s']:,.0f} | "
                    f"{row['mib_s']:.1f} | {row['cpu_s_per_m']:.1f} | {row['rss_mib']:.0f} |"
                )
    lines += [
        "",
        "Ratios (ours-Python over the other; msg/s: higher is better, CPU/msg: lower is better):",
        "",
        "| workload | msg/s Py/Java | CPU/msg Py/Java | msg/s Py/C++ | CPU/msg Py/C++ |",
        "|---|---:|---:|---:|---:|",
    ]
    for workload in workloads:
        if workload.startswith("latency"):
            continue
        py, cpp, java = (table.get((workload, c), {}) for c in ("python", "cpp", "java"))
        lines.append(
            f"| {workload} | {_ratio(py.get('msg_s'), java.get('msg_s'))} | "
            f"{_ratio(py.get('cpu_s_per_m'), java.get('cpu_s_per_m'))} | "
            f"{_ratio(py.get('msg_s'), cpp.get('msg_s'))} | "
            f"{_ratio(py.get('cpu_s_per_m'), cpp.get('cpu_s_per_m'))} |"
        )
    latency_rows = [(w, c) for (w, c) in table if w.startswith("latency")]
    if latency_rows:
        lat = meta["latency"]
        lines += [
            "",
            f"End-to-end latency, produce to consume, {lat['rate']:.0f} msg/s of 1 KiB "
            f"(send time in the payload, one process; msg_not_found_wait_ms="
            f"{lat['msg_not_found_wait_ms']}):",
            "",
            "| client | p50 ms | p95 ms | p99 ms | max ms | CPU s/M msgs |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for workload, client in latency_rows:
            row = table[(workload, client)]
            lines.append(
                f"| {CLIENT_LABELS[client]} | {row['p50']:.1f} | {row['p95']:.1f} | "
                f"{row['p99']:.1f} | {row['max']:.1f} | {row['cpu_s_per_m']:.1f} |"
            )
    return "\n".join(lines) + "\n"


def chart(path: Path, table: dict[tuple[str, str], dict[str, float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt

    workloads = [w for w in dict.fromkeys(w for w, _ in table) if not w.startswith("latency")]
    clients = [c for c in CLIENT_LABELS if any((w, c) in table for w in workloads)]
    fig, axes = plt.subplots(2, 1, figsize=(12, 8), sharex=True)
    width = 0.8 / max(1, len(clients))
    for index, client in enumerate(clients):
        xs = [i + (index - (len(clients) - 1) / 2) * width for i in range(len(workloads))]
        for axis, figure in zip(axes, ("msg_s", "cpu_s_per_m")):
            values = [table.get((w, client), {}).get(figure, 0) for w in workloads]
            axis.bar(xs, values, width, label=CLIENT_LABELS[client])
    axes[0].set_ylabel("messages / s")
    axes[1].set_ylabel("CPU s per million messages")
    for axis in axes:
        axis.set_yscale("log")
        axis.grid(axis="y", alpha=0.3)
    axes[0].legend()
    axes[0].set_title("tubemq: ours (Python, C++) vs the Java client (medians, one run)")
    axes[1].set_xticks(range(len(workloads)))
    axes[1].set_xticklabels(workloads, rotation=30, ha="right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write(
    directory: Path, stamp: str, meta: dict[str, Any], runs: list[dict[str, Any]]
) -> dict[str, Path]:
    """run-<stamp>.json (every run), latest.md and latest.png; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    table = medians(runs)
    paths = {
        "json": directory / f"run-{stamp}.json",
        "markdown": directory / "latest.md",
        "chart": directory / "latest.png",
    }
    compact = [
        {k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in runs
    ]
    paths["json"].write_text(json.dumps({"meta": meta, "runs": compact}, indent=1) + "\n")
    paths["markdown"].write_text(markdown(meta, table))
    try:
        chart(paths["chart"], table)
    except ImportError:
        print("matplotlib is missing (pip install 'tubemq[bench]'): no chart")
        del paths["chart"]
    return paths
