"""Renders a `cuimg load` run as a self-contained HTML page or a PNG: a latency histogram and
throughput and latency over time, with matplotlib (Debian python3-matplotlib).

cuimg embeds this file and runs it as `python3 load_report.py SUMMARY.json RECORDS.csv OUT`
after a run with --report OUT (with --quiet-if-no-matplotlib first, when it has another python3
to try); it can also be run by hand on the files of --json_out and --csv.
The histogram comes from the per-call rows; every other number comes from the JSON summary, so
the report, the JSON and the CSV agree. Exit status: 0 written, 2 bad arguments, 3 no matplotlib.
"""
import base64
import csv
import html
import io
import json
import sys


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


def figure(summary, latencies, plt):
    fig, (hist, rate, lat) = plt.subplots(3, 1, figsize=(9, 10), constrained_layout=True)
    p = summary["latency_ms"]
    # The tail past 1.5 x p99.9 would squeeze the body into a few bins: cut it, say so.
    top = min(p["max"], 1.5 * p["p999"]) if latencies else 1
    beyond = sum(1 for v in latencies if v > top)
    hist.hist(latencies, bins=min(80, max(10, len(latencies) // 20)), range=(0, top), color="#4477aa")
    for name, colour in (("p50", "#228833"), ("p99", "#ee6677"), ("p999", "#aa3377")):
        hist.axvline(p[name], color=colour, linestyle="--", label=f"{name} {p[name]:.3f} ms")
    hist.set_xlabel("latency (ms), OK calls")
    hist.set_ylabel("calls")
    hist.set_title(f"latency histogram ({summary['ok']} OK calls"
                   + (f"; {beyond} above {top:.3f} ms, max {p['max']:.3f} ms)" if beyond else ")"))
    hist.legend()
    windows = summary["windows"]
    t = [w["t"] for w in windows]
    rate.plot(t, [w["ok"] for w in windows], marker="o", color="#4477aa")
    rate.axhline(summary["throughput_rps"], color="#999999", linestyle=":",
                 label=f"mean {summary['throughput_rps']:.1f}/s")
    rate.set_xlabel("second of the measured window")
    rate.set_ylabel("OK responses / s")
    rate.set_title("throughput over time")
    rate.set_ylim(bottom=0)
    rate.legend()
    lat.plot(t, [w["p50_ms"] for w in windows], marker="o", label="p50", color="#228833")
    lat.plot(t, [w["p99_ms"] for w in windows], marker="o", label="p99", color="#ee6677")
    lat.set_xlabel("second of the measured window (calls by start time)")
    lat.set_ylabel("latency (ms)")
    lat.set_title("latency over time")
    lat.set_ylim(bottom=0)
    lat.legend()
    return fig


def table(rows):
    return "<table>" + "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows) + "</table>"


def page(summary, png):
    p, s = summary["latency_ms"], summary["server_us_median"]
    numbers = [("requests", summary["requests"]), ("ok", summary["ok"]),
               ("measured seconds", summary["seconds"]),
               ("throughput (OK/s)", summary["throughput_rps"])]
    numbers += [(f"latency {k} (ms)", v) for k, v in p.items()]
    numbers += [(f"status {k}", v) for k, v in summary["codes"].items()]
    numbers += [(f"server {k} median (µs)", v) for k, v in s.items()]
    # The summary itself rides along (JSON in a script element) for tools and tests.
    embedded = json.dumps(summary).replace("</", "<\\/")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>cuimg load report</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}table{{border-collapse:collapse;margin-bottom:1em}}
th,td{{border:1px solid #ccc;padding:.2em .6em;text-align:left}}img{{max-width:100%}}</style></head>
<body><h1>cuimg load report</h1>
<h2>run</h2>{table(summary["config"].items())}
<h2>summary</h2>{table(numbers)}
<h2>plots</h2><img alt="latency histogram, throughput and latency over time"
src="data:image/png;base64,{base64.b64encode(png).decode()}">
<script type="application/json" id="cuimg-load-summary">{embedded}</script>
</body></html>
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
            print(f"--report needs matplotlib (Debian package python3-matplotlib): {e}", file=sys.stderr)
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
