"""Medians with their spread, paired per-round ratios, cold figures, the Markdown
report, the chart and the JSON record of a bench run."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.drivers import LABELS, NOT_JAVA

MIB = 2**20
# The ratios shown: (numerator, denominator); ours over Java, and Python over C++.
PAIRS = (
    ("python", "java-default"),
    ("python", "java-tuned"),
    ("cpp", "java-tuned"),
    ("python", "cpp"),
)
SHORT = {"python": "Py", "cpp": "C++", "java-default": "Java", "java-tuned": "Java-tuned"}
# What each client does per message, for the report (the drivers' code is the truth).
PER_MESSAGE = """\
Per message, every client: *produce* builds nothing in the timed window (16 payloads
made before it, cycled) and sends one message (sync: waits for the broker's answer
before the next; async: up to 20 000 in flight, the window ends when every answer is
in); *consume* reads the value's first byte and its length (Python `message[0]` and
`len(message)`, in place, C++ a `string_view`, Java `getData()`), and *consume-attrs*
also reads both attributes (`message.attrs`, the C++ `properties`, Java
`getAttrValue`); each batch is confirmed after its messages were read (Java tuned: a
push consumer confirms for itself). *consume-batch*: Python takes whole batches
(`poll_batch()`) and their values as one buffer plus offsets (`Batch.values()`, no
object per message), reads the first byte and the length of the buffer and commits the
batch; C++ runs its consume loop (it has batches already); Java has no such path and
is not run (—). *latency* sends at a fixed rate from a second
thread with the send time in the payload and takes the delay when the consumer holds
the message. *idle* polls a consumer that has nothing to read. *slow-callback*
(Python only) sends with `send_async(..., callback=)` as fast as the producer admits,
each callback sleeping 10 ms. *produce-runs*: a new process per client, one producer,
10 successive runs of send_async + flush."""


def size_label(size: int) -> str:
    return f"{size // 1024} KiB" if size >= 1024 else f"{size} B"


def figures(record: dict[str, Any]) -> dict[str, float]:
    """msg/s, MiB/s, CPU seconds per million messages (client and broker) of a window."""
    elapsed, count = record["elapsed_s"], record["count"]
    per_message = max(count, 1)  # an idle window has no message
    out = {
        "msg_s": count / elapsed,
        "mib_s": record["bytes"] / MIB / elapsed,
        "cpu_s_per_m": record["cpu_s"] / per_message * 1e6,
        "cpu_pct": record["cpu_s"] / elapsed * 100,  # of one core
        "rss_mib": record.get("peak_rss_mib", 0.0),
    }
    # perf's counts (bench/drivers.py KernelCounts), when it could count.
    for name in ("syscalls", "writes", "ctx_switches"):
        if name in record:
            out[f"{name}_per_msg"] = record[name] / per_message
    if "gc_max_ms" in record:  # Python: its cyclic collector's longest pause
        out["gc_max_ms"] = record["gc_max_ms"]
    if "broker_cpu_s" in record:
        out["broker_cpu_s_per_m"] = record["broker_cpu_s"] / per_message * 1e6
        out["broker_cpu_pct"] = record["broker_cpu_s"] / elapsed * 100
    return out


def one_line(record: dict[str, Any]) -> str:
    f = figures(record)
    text = (
        f"{record['workload']:<20} {record['client']:<12} {f['msg_s']:>9,.0f} msg/s "
        f"{f['mib_s']:>7.1f} MiB/s {f['cpu_s_per_m']:>7.1f} CPU s/M {f['rss_mib']:>6.0f} MiB"
    )
    if record.get("failed"):
        text += f"  ({record['failed']:,} sends failed)"
    if record.get("latency_ms"):
        lat = record["latency_ms"]
        text += f"  p50 {lat['p50']:.1f} p99 {lat['p99']:.1f} p99.9 {lat['p999']:.1f} ms"
    return text


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize(runs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(workload, client) -> each figure's median, min and max over the measured rounds."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in runs:
        if record["phase"] == "measured":
            grouped[(record["workload"], record["client"])].append(record)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for key, records in grouped.items():
        per_window = [figures(r) for r in records]
        names = [n for n in per_window[0] if all(n in f for f in per_window)]
        row: dict[str, Any] = {name: _spread([f[name] for f in per_window]) for name in names}
        latencies = [r["latency_ms"] for r in records if r.get("latency_ms")]
        for q in ("p50", "p95", "p99", "p999", "max", "first"):
            if latencies and all(q in lat for lat in latencies):  # "first": since stop 48
                row[q] = _spread([lat[q] for lat in latencies])
        row["rounds"] = len(records)
        out[key] = row
    return out


def paired_ratios(runs: list[dict[str, Any]]) -> dict[tuple[str, str, str, str], dict]:
    """(workload, figure, a, b) -> the spread of a/b over rounds, each ratio taken
    within one round, where both clients ran minutes apart at most."""
    by_round: dict[tuple[str, int], dict[str, dict[str, float]]] = defaultdict(dict)
    for record in runs:
        if record["phase"] == "measured":
            by_round[(record["workload"], record["round"])][record["client"]] = figures(record)
    ratios: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for (workload, _), clients in by_round.items():
        for a, b in PAIRS:
            if a in clients and b in clients and clients[b]["msg_s"] and clients[a]["msg_s"]:
                for figure in ("msg_s", "cpu_s_per_m"):
                    ratios[(workload, figure, a, b)].append(clients[a][figure] / clients[b][figure])
    return {key: _spread(values) for key, values in ratios.items()}


# Workloads with a table of their own rather than a row of the throughput table.
OWN_TABLES = ("latency", "idle", "slow-callback", "produce-runs")


def _small(value: float | None) -> str:
    """A small per-message figure, '-' when it was not measured."""
    return "-" if value is None else f"{value:.2f}"


def _median(spread: dict[str, float] | None) -> str:
    return _small(spread["median"] if spread else None)


def _slow_callback(runs: list[dict[str, Any]]) -> list[str]:
    """Whether outcomes a slow callback has not taken yet pile up: the pace and RSS."""
    records = [r for r in runs if r["phase"] == "measured" and r["workload"].startswith("slow")]
    if not records:
        return []
    lines = [
        "",
        "Slow callback (Python): `send_async(topic, value, callback=cb)` of 1 KiB as fast "
        "as the producer admits it (`max_in_flight=20000`), `cb` sleeping 10 ms, one row "
        "per round. Sends must slow to the callback's pace (100/s) once the bound is "
        "reached, with memory flat: outcomes not yet handed to Python count against it.",
        "",
        "| round | sends in the window | sends/s after 2 s | RSS MiB at 2 s | RSS MiB at the end "
        "| most sends waiting (in flight + undelivered) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        lines.append(
            f"| {r['round']} | {r['count']:,} | {r['steady_msg_s']:,.0f} | "
            f"{r['rss_start_mib']:.0f} | {r['rss_end_mib']:.0f} | {r['waiting_max']:,} |"
        )
    return lines


def _successive_runs(meta: dict[str, Any], runs: list[dict[str, Any]]) -> list[str]:
    """produce-runs: run 1, 2 and the last of each client, and the last against run 2."""
    by_client: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in runs:
        if record["phase"] == "runs":
            by_client[record["client"]].append(record)
    if not by_client:
        return []
    setting = meta.get("produce_runs", {})
    lines = [
        "",
        f"Successive runs: a new process per client, one producer (`max_in_flight` 20 000), "
        f"{setting.get('runs', 10)} runs one after another of "
        f"{setting.get('messages', 0):,} send_async of 1 KiB + flush, as a new user tries "
        "it; the last run should match run 2 (no slow state) with RSS flat. RSS: resident "
        "after each run from run 2 on, its lowest and highest.",
        "",
        "| client | run 1 msg/s | run 2 msg/s | last msg/s | last/run 2 | run 2 CPU s/M "
        "| last CPU s/M | last/run 2 | RSS MiB, runs 2-last | syscalls/msg (last) "
        "| writes/msg (last) | ctx sw/msg (last) | longest GC pause ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for client, records in by_client.items():
        records.sort(key=lambda r: r["round"])
        first, second, last = (figures(records[i]) for i in (0, 1, -1))
        gc = max((r.get("gc_max_ms", 0.0) for r in records), default=0.0)
        rss = [r.get("rss_mib", 0.0) for r in records[1:]]
        lines.append(
            f"| {LABELS[client]} | {first['msg_s']:,.0f} | {second['msg_s']:,.0f} | "
            f"{last['msg_s']:,.0f} | {last['msg_s'] / second['msg_s']:.2f} | "
            f"{second['cpu_s_per_m']:.1f} | {last['cpu_s_per_m']:.1f} | "
            f"{last['cpu_s_per_m'] / second['cpu_s_per_m']:.2f} | "
            f"{min(rss):.0f}-{max(rss):.0f} | "
            f"{_small(last.get('syscalls_per_msg'))} | {_small(last.get('writes_per_msg'))} | "
            f"{_small(last.get('ctx_switches_per_msg'))} | "
            + (f"{gc:.1f} |" if client == "python" else "- |")
        )
    return lines


def _java_less(workload: str) -> bool:
    """Whether Java does not run this workload (its mode is the name's first word)."""
    return workload.split()[0] in NOT_JAVA


def _cell(spread: dict[str, float] | None, form: str = ",.0f") -> str:
    if not spread:
        return "-"
    return f"{spread['median']:{form}} ({spread['min']:{form}}-{spread['max']:{form}})"


def markdown(meta: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    table, ratios = summarize(runs), paired_ratios(runs)
    workloads = list(dict.fromkeys(r["workload"] for r in runs if r["phase"] == "measured"))
    throughput = [w for w in workloads if not w.startswith(OWN_TABLES)]
    clients = [c for c in LABELS if any(key[1] == c for key in table)]
    settings = meta["settings"]
    tuned = meta["java_tuned"]
    lines = [
        f"# Benchmark {meta['started']}",
        "",
        f"`{meta['command']}`: one long-lived process per client; a cold window first, "
        f"then an untimed warm-up of every workload (≥ {settings['warmup_s']:.0f} s per "
        f"client, in its own process), then {meta['rounds']} measured rounds with the "
        f"order of the clients rotating. A window runs {settings['window_s']:.0f} s or "
        f"{settings['window_max']:,} messages, whichever comes first (consume: the "
        f"backlog, from its start with a new group, timed from the first message). "
        f"{meta['cpus']} CPUs shared with other work (load average at the end "
        f"{meta['load_average'][0]:.1f}); cluster {meta['cluster']}, server JIT "
        f"{meta.get('server_jit', 'C1 only')}, broker memory store "
        f"{'on' if meta.get('broker_memory_store') else 'off'}.",
        "",
        f"Java, default: the client and the JVM as they come. Java, tuned: JVM "
        f"`{tuned['jvm']}`; {tuned['client']}.",
        "",
        PER_MESSAGE,
        "",
        "Medians over the rounds, (min-max) in brackets. CPU = the client process's CPU "
        "time (every thread) over the window, per million messages; broker = the broker "
        "JVM's over the same window (a consumer's group join included); RSS = the "
        "process's peak. Syscalls and context switches: the client process's, every "
        "thread, counted by `perf stat` from the window's command to its answer, per "
        "message (medians; '-' where perf could not count); writes: write, writev, "
        "sendto, sendmsg and sendmmsg.",
        "",
        "| workload | client | msg/s | CPU s/M msgs | broker CPU s/M | MiB/s | peak RSS MiB "
        "| syscalls/msg | writes/msg | ctx sw/msg |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for workload in throughput:
        for client in clients:
            row = table.get((workload, client))
            if row:
                lines.append(
                    f"| {workload} | {LABELS[client]} | {_cell(row['msg_s'])} | "
                    f"{_cell(row['cpu_s_per_m'], '.1f')} | "
                    f"{_cell(row.get('broker_cpu_s_per_m'), '.1f')} | "
                    f"{row['mib_s']['median']:.1f} | {row['rss_mib']['max']:.0f} | "
                    f"{_median(row.get('syscalls_per_msg'))} | "
                    f"{_median(row.get('writes_per_msg'))} | "
                    f"{_median(row.get('ctx_switches_per_msg'))} |"
                )
    # A consume window that read the whole backlog before its time was up is shorter
    # than asked: said here rather than hidden in the medians.
    short = [
        r for r in runs
        if r["phase"] == "measured" and r.get("latency_ms") is None
        and r["elapsed_s"] < settings["window_s"] and r["count"] < settings["window_max"]
    ]  # fmt: skip
    if short:
        lines += [
            "",
            f"{len(short)} of the windows above ended before {settings['window_s']:.0f} s "
            f"and {settings['window_max']:,} messages (a backlog read out): "
            + ", ".join(sorted({f"{r['workload']} {r['client']}" for r in short}))
            + ".",
        ]
    failed = [r for r in runs if r.get("failed")]
    if failed:
        lines += ["", "Sends that failed (not counted in the figures above):", ""]
        lines += [
            f"- {r['workload']}, {LABELS[r['client']]}, {r['phase']} round {r['round']}: "
            f"{r['failed']:,} failed (first: {r.get('failure')})"
            for r in failed
        ]
    pairs = [p for p in PAIRS if p[0] in clients and p[1] in clients]
    for figure, title in (
        ("msg_s", "msg/s ratios (higher: the first is faster)"),
        ("cpu_s_per_m", "CPU-per-message ratios (lower: the first spends less)"),
    ):
        lines += [
            "",
            f"Paired per-round {title}, median (min-max) of the rounds:",
            "",
            "| workload | " + " | ".join(f"{SHORT[a]}/{SHORT[b]}" for a, b in pairs) + " |",
            "|---|" + "---:|" * len(pairs),
        ]
        for workload in throughput:
            cells = [
                "—" if _java_less(workload) and "java" in a + b
                else _cell(ratios.get((workload, figure, a, b)), ".2f")
                for a, b in pairs
            ]  # fmt: skip
            lines.append(f"| {workload} | " + " | ".join(cells) + " |")
    latency = [w for w in workloads if w.startswith("latency")]
    if latency:
        lat = meta["latency"]
        lines += [
            "",
            f"End-to-end latency, produce to consume, 1 KiB at a fixed rate for "
            f"{settings['latency_s']:.0f} s per window (latency: every client with its "
            f"defaults, Java tuned with its latency settings; latency-tuned: ours with "
            f"msg_not_found_wait_ms={lat['tuned_msg_not_found_wait_ms']}); percentiles of "
            "the messages sent after the window's first second, and apart from them the "
            "delay of its first message (first: the consumer waited before the window, so "
            "its partitions rest as long as an idle consumer's do); medians over the rounds, "
            "(min-max); CPU as % of one core over the window:",
            "",
            "| workload | client | p50 ms | p95 ms | p99 ms | p99.9 ms | max ms | first ms "
            "| client CPU % | broker CPU % |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for workload in latency:
            for client in clients:
                row = table.get((workload, client))
                if row:
                    lines.append(
                        f"| {workload} | {LABELS[client]} | "
                        + " | ".join(_cell(row[q], ".2f") for q in ("p50", "p95", "p99", "p999"))
                        + f" | {_cell(row['max'], '.1f')} | {_cell(row.get('first'), '.1f')}"
                        f" | {_cell(row['cpu_pct'], '.1f')} | "
                        f"{_cell(row.get('broker_cpu_pct'), '.1f')} |"
                    )
    idle = [w for w in workloads if w == "idle"]
    if idle:
        lines += [
            "",
            f"Idle cost: one consumer of a new group holding the 4 partitions of a topic "
            f"nobody writes, polled all along for {settings['idle_s']:.0f} s with default "
            "settings (after its join); CPU as % of one core:",
            "",
            "| client | client CPU % | broker CPU % |",
            "|---|---:|---:|",
        ]
        for client in clients:
            row = table.get(("idle", client))
            if row:
                lines.append(
                    f"| {LABELS[client]} | {_cell(row['cpu_pct'], '.2f')} | "
                    f"{_cell(row.get('broker_cpu_pct'), '.2f')} |"
                )
    lines += _slow_callback(runs) + _successive_runs(meta, runs)
    cold = [r for r in runs if r["phase"] == "cold"]
    if cold:
        lines += [
            "",
            "Cold start, apart from the figures above: from spawning the process to its "
            "ready line (interpreter or JVM, the client library loaded), and its first "
            f"window ({cold[0]['workload']}, before any warm-up):",
            "",
            "| client | start-up s | start-up CPU s | first window msg/s | first window CPU s/M |",
            "|---|---:|---:|---:|---:|",
        ]
        for record in cold:
            startup = meta["startups"][record["client"]]
            f = figures(record)
            lines.append(
                f"| {LABELS[record['client']]} | {startup['wall_s']:.2f} | "
                f"{startup['cpu_s']:.2f} | {f['msg_s']:,.0f} | {f['cpu_s_per_m']:.1f} |"
            )
    return "\n".join(lines) + "\n"


def chart(path: Path, runs: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt

    table = summarize(runs)
    workloads = [w for w in dict.fromkeys(w for w, _ in table) if not w.startswith(OWN_TABLES)]
    clients = [c for c in LABELS if any((w, c) in table for w in workloads)]
    fig, axes = plt.subplots(2, 1, figsize=(13, 8), sharex=True)
    width = 0.8 / max(1, len(clients))
    for index, client in enumerate(clients):
        xs = [i + (index - (len(clients) - 1) / 2) * width for i in range(len(workloads))]
        for axis, figure in zip(axes, ("msg_s", "cpu_s_per_m")):
            spreads = [table.get((w, client), {}).get(figure) for w in workloads]
            medians = [s["median"] if s else 0 for s in spreads]
            below = [s["median"] - s["min"] if s else 0 for s in spreads]
            above = [s["max"] - s["median"] if s else 0 for s in spreads]
            axis.bar(xs, medians, width, yerr=[below, above], capsize=2, label=LABELS[client])
    axes[0].set_ylabel("messages / s")
    axes[1].set_ylabel("client CPU s per million messages")
    for axis in axes:
        axis.set_yscale("log")
        axis.grid(axis="y", alpha=0.3)
    axes[0].legend()
    axes[0].set_title("tubemq: ours (Python, C++) vs the Java client (medians, min-max bars)")
    axes[1].set_xticks(range(len(workloads)))
    axes[1].set_xticklabels(workloads, rotation=30, ha="right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write(
    directory: Path, stamp: str, meta: dict[str, Any], runs: list[dict[str, Any]]
) -> dict[str, Path]:
    """run-<stamp>.json (every window), latest.md and latest.png; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": directory / f"run-{stamp}.json",
        "markdown": directory / "latest.md",
        "chart": directory / "latest.png",
    }
    compact = [
        {k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in runs
    ]
    paths["json"].write_text(json.dumps({"meta": meta, "runs": compact}, indent=1) + "\n")
    paths["markdown"].write_text(markdown(meta, runs))
    try:
        chart(paths["chart"], runs)
    except ImportError:
        print("matplotlib is missing (pip install 'tubemq[bench]'): no chart")
        del paths["chart"]
    return paths
