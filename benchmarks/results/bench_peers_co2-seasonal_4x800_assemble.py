# Kept for the record: it ran once, on the machine of the run (AMD EPYC, 2026-11-28), reading pickles
# written by gdb from the running bench_peers processes (/work/runs/co2/*.pkl, not committed).
"""Assemble bench_peers' co2-seasonal report from the run of ce64ff5 whose NumPyro part was stopped
after its measured chains in NUMPYRO_PICKLE (session time): the gpbayes methods' summaries as their
worker processes returned them, NumPyro's finished chains read from its worker's frame."""
import pickle
import sys

import numpy as np

sys.path.insert(0, "/work/wt/co2run/benchmarks")
sys.path.insert(0, "/work/wt/co2run/src")
import bench_peers as bp  # noqa: E402

gb_results = pickle.load(open("/work/runs/co2/futures.pkl", "rb"))
npy = pickle.load(open(sys.argv[1], "rb"))
lines = []


def out(s=""):
    print(s)
    lines.append(s)


head = [ln for ln in open("/work/runs/co2/log.txt").read().splitlines() if not ln.startswith("[heavy]")
        and "NotConvergedWarning" not in ln and "idata = gb.sample" not in ln]
for ln in head:
    out(ln)
k = len(npy["draws"])
out(f"NOTE: numpyro-nuts stopped after {k} of its 4 measured chains (the session's time ran out; {npy['times'][0]:.0f} "
    f"CPU-s per chain against gpbayes-sample-nuts' {gb_results['gpbayes-sample-nuts'][0]['cpu'] / 4:.0f}); its "
    f"summary is of those {k} chains (ESS per CPU-second is a rate, comparable across chain counts); its finished "
    "chains were read from its worker process (gdb, PyRun_SimpleString) and the gpbayes methods' summaries from "
    "the finished futures of the parent, since the run writes its report only at the end "
    "(/work/runs/co2/assemble.py)")
names = list(bp.co2_model(*bp.co2_data()[:2]).hyperparameter_labels)
results = []
for m in ("gpbayes-sample-nuts", "gpbayes-default"):
    summary, mlines = gb_results[m]
    for ln in mlines:
        out(ln)
    results.append(summary)
times = np.asarray(npy["times"])
res = {"draws": np.stack(npy["draws"]), "cpu": float(times.sum()), "compile": max(npy["t_first"] - float(times.mean()), 0.0),
       "per_grad": npy["per_grad"], "steps": float(np.mean(np.concatenate(npy["steps"]))), "divergences": int(npy["div"]),
       "extra": {}}
out(f"numpyro-nuts: {k} chains, {res['cpu']:.0f} CPU-s")
results.append(bp.summarise(bp.PEER, res, names))
bp.report(results, names, out)
bp.report_extra(results, out)
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
