"""Renders a `cuimg load` run as a self-contained HTML page or a PNG: a latency histogram and
throughput and latency over time, with matplotlib (Debian python3-matplotlib).

cuimg embeds this file and runs it as `python3 load_report.py SUMMARY.json RECORDS.csv OUT`
after a run with --report OUT (with --quiet-if-no-matplotlib first, when it has another python3
to try); it can also be run by hand on the files of --json_out and --csv.
The histogram comes from the per-call rows; every other number comes from the JSON summary, so
the report, the JSON and the CSV agree. A run without a successful call gets no histogram: a
"no successful calls" panel lists the errors instead. Exit status: 0 written, 2 bad arguments,
3 no matplotlib.
"""
import base64
import csv
import html
import io
import json
import sys

STAGES = ("queue", "decode", "h2d", "kernel", "d2h")
STAGE_COLOURS = {
    "queue": "#bbbbbb",
    "decode": "#ccbb44",
    "h2d": "#66ccee",
    "kernel": "#4477aa",
    "d2h": "#228833",
    "other": "#eeeeee",
}


def load(summary_path, records_path):
    with open(summary_path) as f:
        summary = json.load(f)
    latencies, codes = [], {}
    with open(records_path, newline="") as f:
        for row in csv.DictReader(f):
            codes[row["code"]] = codes.get(row["code"], 0) + 1
            if row["code"] == "OK":
                latencies.append(float(row["latency_ms"]))
    return summary, latencies, codes


def error_lines(summary, width=110):
    """One line per failing code and per kept message, for the PNG's text panel."""
    lines = []
    for code, e in summary["errors"].items():
        lines.append(f"{code}: {e['count']} calls")
        for m in e["messages"]:
            text = m["message"] if len(m["message"]) <= width else m["message"][: width - 1] + "…"
            lines.append(f"    {m['count']} x  {text}")
        if e["other_messages"]:
            lines.append(f"    {e['other_messages']} x  (other messages)")
    return lines


def histogram(ax, summary, latencies):
    from matplotlib.ticker import MaxNLocator

    p = summary["latency_ms"]
    # The tail past 1.5 x p99.9 would squeeze the body into a few bins: cut it, say so.
    top = min(p["max"], 1.5 * p["p999"])
    top = top if top > 0 else max(p["max"], 1e-3)
    beyond = sum(1 for v in latencies if v > top)
    ax.hist(latencies, bins=min(80, max(10, len(latencies) // 20)), range=(0, top), color="#4477aa")
    for name, colour in (("p50", "#228833"), ("p99", "#ee6677"), ("p999", "#aa3377")):
        ax.axvline(p[name], color=colour, linestyle="--", label=f"{name} {p[name]:.3f} ms")
    ax.set_xlim(left=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("latency (ms), OK calls")
    ax.set_ylabel("calls")
    ax.set_title(
        f"latency histogram ({summary['ok']} OK calls"
        + (f"; {beyond} above {top:.3f} ms, max {p['max']:.3f} ms)" if beyond else ")")
    )
    ax.legend()


def no_success_panel(ax, summary):
    ax.axis("off")
    ax.set_title("no successful calls", color="#aa3377", fontweight="bold")
    text = [f"all {summary['requests']} measured calls failed; the server said:", ""]
    text += error_lines(summary, width=95)[:14]
    ax.text(
        0,
        1,
        "\n".join(text),
        va="top",
        ha="left",
        family="monospace",
        fontsize=9,
        transform=ax.transAxes,
    )


def seconds_axis(ax, count):
    """Whole seconds only on the x axis, each one labelled while they are few."""
    from matplotlib.ticker import MaxNLocator

    if count <= 20:
        ax.set_xticks(range(count))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def over_time(rate, lat, summary):
    windows = summary["windows"]
    t = [w["t"] for w in windows]
    # Every second has its bar, the empty ones none (zero calls), and the axis never goes below
    # second 0; latency has a gap where no OK call started (a line across it would invent values).
    span = (-0.6, max(len(windows), 1) - 0.4)
    ok = [w["ok"] for w in windows]
    rate.bar(t, ok, width=0.8, color="#4477aa", label="OK")
    if any(w["errors"] for w in windows):
        rate.bar(
            t, [w["errors"] for w in windows], width=0.8, bottom=ok, color="#ee6677", label="failed"
        )
    rate.axhline(
        summary["throughput_rps"],
        color="#555555",
        linestyle=":",
        label=f"mean {summary['throughput_rps']:.1f} OK/s",
    )
    rate.set_xlabel("second of the measured window (calls by start time)")
    rate.set_ylabel("calls / s")
    rate.set_title("calls per second")
    rate.set_xlim(*span)
    rate.set_ylim(bottom=0)
    seconds_axis(rate, len(windows))
    rate.legend()
    if lat is None:
        return
    nan = float("nan")
    for key, colour in (("p50_ms", "#228833"), ("p99_ms", "#ee6677")):
        lat.plot(
            t,
            [nan if w[key] is None else w[key] for w in windows],
            marker="o",
            label=key[:3],
            color=colour,
        )
    lat.set_xlabel("second of the measured window (calls by start time)")
    lat.set_ylabel("latency (ms)")
    lat.set_title("latency over time (gaps: no OK call started that second)")
    lat.set_xlim(*span)
    lat.set_ylim(bottom=0)
    seconds_axis(lat, len(windows))
    lat.legend()


def figure(summary, latencies, plt):
    if latencies:
        fig, (hist, rate, lat) = plt.subplots(3, 1, figsize=(9, 10), constrained_layout=True)
        histogram(hist, summary, latencies)
        over_time(rate, lat, summary)
    else:
        fig, (text, rate) = plt.subplots(
            2, 1, figsize=(9, 7), constrained_layout=True, gridspec_kw={"height_ratios": (2, 3)}
        )
        no_success_panel(text, summary)
        over_time(rate, None, summary)
    return fig


def esc(value):
    return html.escape(str(value))


def table(rows, cls=""):
    return (
        f'<table class="{cls}">'
        + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
        + "</table>"
    )


def cards(summary):
    p = summary["latency_ms"]
    failed = summary["requests"] - summary["ok"]
    items = [
        ("calls measured", summary["requests"], ""),
        ("OK", summary["ok"], "good" if summary["ok"] else "bad"),
        ("failed", failed, "bad" if failed else "good"),
        ("throughput", f"{summary['throughput_rps']:.1f} OK/s", ""),
    ]
    if summary["ok"]:
        items += [("p50", f"{p['p50']:.4g} ms", ""), ("p99", f"{p['p99']:.4g} ms", "")]
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card {cls}"><div class="v">{esc(v)}</div>'
            f'<div class="k">{esc(k)}</div></div>'
            for k, v, cls in items
        )
        + "</div>"
    )


def errors_panel(summary):
    if not summary["errors"]:
        return ""
    rows = []
    for code, e in summary["errors"].items():
        messages = list(e["messages"])
        if e["other_messages"]:
            messages.append({"message": "(other messages)", "count": e["other_messages"]})
        for i, m in enumerate(messages):
            head = (
                (
                    f'<td rowspan="{len(messages)}" class="code">{esc(code)}</td>'
                    f'<td rowspan="{len(messages)}">{e["count"]}</td>'
                )
                if i == 0
                else ""
            )
            rows.append(
                f"<tr>{head}<td>{m['count']}</td><td class=\"msg\">{esc(m['message'])}</td></tr>"
            )
    if summary["ok"] == 0:
        title = "No successful calls"
        intro = (
            f"<p>All {summary['requests']} measured calls failed, so there is no latency to "
            "plot. The server's answers:</p>"
        )
    else:
        title = "Failures"
        intro = (
            f"<p>{summary['requests'] - summary['ok']} of {summary['requests']} measured "
            "calls failed. The server's answers:</p>"
        )
    return (
        f'<section class="panel errors" id="errors"><h2>{title}</h2>{intro}'
        "<table><tr><th>code</th><th>calls</th><th>of which</th><th>message (the first "
        f"distinct ones, truncated)</th></tr>{''.join(rows)}</table></section>"
    )


def stages_panel(summary):
    s = summary["server_us_median"]
    if not summary["ok"]:
        return ""
    parts = [(k, s[k]) for k in STAGES if s[k] > 0]
    other = s["total"] - sum(v for _, v in parts)
    if other > 0.05 * s["total"]:
        parts.append(("other", other))
    whole = sum(v for _, v in parts) or 1
    bar = "".join(
        f'<div style="width:{100 * v / whole:.2f}%;background:{STAGE_COLOURS[k]}" '
        f'title="{k} {v:.1f} µs">{esc(k) if v / whole > 0.08 else ""}</div>'
        for k, v in parts
    )
    rows = [(f"{k}", f"{s[k]:.1f}") for k in STAGES + ("total",)]
    return (
        '<section class="panel"><h2>Server stages</h2><p>Medians over the OK calls, µs, from '
        f'the <code>cuimg-timing</code> trailers.</p><div class="bar">{bar}</div>'
        f'{table(rows, "narrow")}</section>'
    )


def windows_table(summary):
    rows = "".join(
        f"<tr><td>{w['t']:.0f}</td><td>{w['ok']}</td><td>{w['errors']}</td>"
        f"<td>{'' if w['p50_ms'] is None else w['p50_ms']}</td>"
        f"<td>{'' if w['p99_ms'] is None else w['p99_ms']}</td></tr>"
        for w in summary["windows"]
    )
    return (
        "<details><summary>per second</summary><table><tr><th>second</th><th>OK</th>"
        f"<th>failed</th><th>p50 ms</th><th>p99 ms</th></tr>{rows}</table></details>"
    )


def context_rows(context):
    server = context["server"]
    rows = [
        ("date (UTC)", context["date_utc"]),
        ("client host", context["client_host"]),
        ("client", context["client"]),
        ("server version", server["version"]),
        ("server commit", server["commit"]),
        ("backend", server["backend"]),
        ("devices (from trailers)", ", ".join(map(str, context["devices"])) or "unknown"),
        ("metrics endpoint", server["metrics"]),
    ]
    rows += [
        (f"server {k}", v)
        for k, v in server.items()
        if k not in ("version", "commit", "backend", "metrics", "note")
    ]
    if "note" in server:
        rows.append(("note", server["note"]))
    return rows


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;background:#f5f6f8;
margin:0}main{max-width:64em;margin:0 auto;padding:1.5em}h1{margin:0 0 .2em;font-size:1.6em}
.sub{color:#555;margin:0 0 1em}h2{font-size:1.15em;margin:0 0 .6em}
.panel{background:#fff;border:1px solid #dde;border-radius:8px;padding:1em 1.2em;margin:0 0 1em}
.cards{display:flex;flex-wrap:wrap;gap:.7em;margin:0 0 1em}
.card{background:#fff;border:1px solid #dde;border-radius:8px;padding:.6em 1em;flex:1 1 7em}
.card .v{font-size:1.4em;font-weight:600}.card .k{color:#666;font-size:.85em}
.card.good .v{color:#227733}.card.bad .v{color:#bb2244}
.errors{border-color:#e9a;background:#fff6f8}.errors h2{color:#aa2244}
table{border-collapse:collapse;margin:.3em 0;font-size:.92em}
th,td{border:1px solid #dde;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f0f1f5;font-weight:600}td.msg{font-family:ui-monospace,monospace;word-break:break-word}
td.code{font-weight:600;color:#aa2244}.grid{display:grid;grid-template-columns:1fr 1fr;gap:1em}
.bar{display:flex;height:1.6em;border-radius:4px;overflow:hidden;margin:.5em 0 .8em;font-size:.8em}
.bar div{display:flex;align-items:center;justify-content:center;color:#222;white-space:nowrap}
img{max-width:100%;display:block;margin:0 auto}details{margin-top:.6em}
"""


def page(summary, png):
    p, config, context = summary["latency_ms"], summary["config"], summary["context"]
    numbers = [
        ("calls measured", summary["requests"]),
        ("OK", summary["ok"]),
        ("measured seconds", summary["seconds"]),
        ("throughput (OK/s)", summary["throughput_rps"]),
        (
            "warm-up",
            f"{summary['warmup']['seconds']} s, {summary['warmup']['calls']} calls " "not counted",
        ),
    ]
    numbers += [(f"status {k}", v) for k, v in summary["codes"].items()]
    latency = table([(f"{k} (ms)", v) for k, v in p.items()], "narrow") if summary["ok"] else ""
    # The summary itself rides along (JSON in a script element) for tools and tests.
    embedded = json.dumps(summary).replace("</", "<\\/")
    title = f"{config['rpc']} against {config['target']}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>cuimg load report: {esc(title)}</title>
<style>{STYLE}</style></head>
<body><main><h1>cuimg load report</h1>
<p class="sub">{esc(title)} &middot; {esc(context['date_utc'])}
&middot; from {esc(context['client_host'])}
&middot; server {esc(context['server']['version'])}, backend {esc(context['server']['backend'])}</p>
{cards(summary)}
{errors_panel(summary)}
<div class="grid"><section class="panel"><h2>Summary</h2>{table(numbers)}</section>
<section class="panel"><h2>Latency of OK calls</h2>
{latency or "<p>no successful calls</p>"}</section></div>
{stages_panel(summary)}
<section class="panel"><h2>Plots</h2><img alt="latency histogram, throughput and latency over time"
src="data:image/png;base64,{base64.b64encode(png).decode()}">{windows_table(summary)}</section>
<div class="grid"><section class="panel"><h2>Run</h2>{table(config.items())}</section>
<section class="panel"><h2>Context</h2>{table(context_rows(context))}</section></div>
<script type="application/json" id="cuimg-load-summary">{embedded}</script>
</main></body></html>
"""


def main(argv):
    quiet = len(argv) > 1 and argv[1] == "--quiet-if-no-matplotlib"
    if quiet:
        argv = argv[:1] + argv[2:]
    if len(argv) != 4 or not argv[3].lower().endswith((".html", ".htm", ".png")):
        print("usage: load_report.py SUMMARY.json RECORDS.csv OUT.html|OUT.png", file=sys.stderr)
        return 2
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        if not quiet:
            print(
                f"--report needs matplotlib (Debian package python3-matplotlib): {e}",
                file=sys.stderr,
            )
        return 3
    summary, latencies, codes = load(argv[1], argv[2])
    if codes != summary["codes"]:
        print(f"records {codes} and summary {summary['codes']} disagree", file=sys.stderr)
        return 2
    buffer = io.BytesIO()
    figure(summary, latencies, plt).savefig(buffer, format="png", dpi=100)
    if argv[3].lower().endswith(".png"):
        with open(argv[3], "wb") as f:
            f.write(buffer.getvalue())
    else:
        with open(argv[3], "w", encoding="utf-8") as f:
            f.write(page(summary, buffer.getvalue()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
