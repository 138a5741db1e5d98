"""Figures.  Matplotlib with the Agg backend; every function writes one file atomically."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from gpbayes_repro import io  # noqa: E402

__all__ = ["trace_and_marginals", "save_figure", "readable_log_axis", "pm_gpc_fig2", "pm_gpc_fig34"]


def readable_log_axis(ax, axis: str = "y") -> None:
    """Plain-number tick labels on a log axis (0.5, 1, 2, 5, 10, ... instead of 4x10^0).

    Major ticks at 1, 2 and 5 times the powers of ten (only the powers when the axis
    spans more than 2.5 decades), labelled with ``%g``; minor ticks unlabelled.  Call it
    after plotting (it reads the axis limits).  Matplotlib's default labels the minor ticks of an axis that
    spans less than a decade in mathtext (``4x10^0``), which is hard to read.
    """
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    target = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    wide = lo > 0 and hi > 0 and math.log10(hi / lo) > 2.5  # over ~3 decades the powers of ten suffice
    target.set_major_locator(LogLocator(base=10, subs=(1.0,) if wide else (1.0, 2.0, 5.0)))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(NullFormatter())


def save_figure(fig, path) -> None:
    suffix = "." + str(path).rsplit(".", 1)[-1]
    with io.atomic_path(path, suffix=suffix) as tmp:
        fig.savefig(tmp, bbox_inches="tight")
    plt.close(fig)


def trace_and_marginals(posterior, ml_values: dict, path, *, title: str = "", var: str = "psi") -> None:
    """Traces (left) and marginal histograms (right) per parameter; ML value marked in red."""
    da = posterior[var]
    params = list(da["param"].values)
    fig, axes = plt.subplots(len(params), 2, figsize=(9, 1.25 * len(params) + 0.8),
                             gridspec_kw={"width_ratios": [3, 1]}, squeeze=False)
    for i, p in enumerate(params):
        x = da.sel(param=p).values  # (chain, draw)
        ax_t, ax_h = axes[i]
        for c in range(x.shape[0]):
            ax_t.plot(x[c], lw=0.4, alpha=0.8)
        ax_t.set_ylabel(f"log {p}", fontsize=7)
        ax_t.tick_params(labelsize=6)
        ax_h.hist(x.ravel(), bins=40, density=True, color="0.6")
        if p in ml_values:
            ax_t.axhline(ml_values[p], color="red", lw=0.8)
            ax_h.axvline(ml_values[p], color="red", lw=1.0, label="type-II ML")
        ax_h.tick_params(labelsize=6)
        ax_h.set_yticks([])
    axes[-1, 0].set_xlabel("draw (after burn-in)")
    axes[0, 1].legend(fontsize=6, loc="upper right")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    save_figure(fig, path)


def pm_gpc_fig2(posts, prior_pdfs, path, *, title: str = "") -> None:
    """F&G Fig. 2: rows = data sets (n), columns = (approximation, N_imp).

    Black solid: mean over repetitions of the normalised PM estimate of
    p(tau | y); dashed: 2.5% and 97.5% quantiles; red: the prior density.
    """
    cols = [(a, k) for a in posts[0]["approximation"].values for k in posts[0]["n_imp"].values]
    fig, axes = plt.subplots(len(posts), len(cols), figsize=(3.0 * len(cols), 2.5 * len(posts)),
                             squeeze=False, sharex=True)
    for r, (post, prior_pdf) in enumerate(zip(posts, prior_pdfs)):
        tau = post["tau"].values
        ymax = float(post.quantile(0.975, dim="rep").max()) * 1.05
        for c, (a, k) in enumerate(cols):
            ax = axes[r, c]
            p = post.sel(approximation=a, n_imp=k)
            q = p.quantile([0.025, 0.975], dim="rep")
            ax.plot(tau, p.mean("rep"), color="black", lw=1.2, label="mean of the PM estimate")
            ax.plot(tau, q.sel(quantile=0.025), color="black", ls="--", lw=0.8, label="2.5% and 97.5% quantiles")
            ax.plot(tau, q.sel(quantile=0.975), color="black", ls="--", lw=0.8)
            ax.plot(tau, prior_pdf, color="red", lw=1.0, label="prior p(tau)")
            if r == 0 and c == len(cols) - 1:
                ax.legend(fontsize=6, loc="upper right")
            ax.set_ylim(0, ymax)
            if c == 0:
                ax.set_ylabel("p(tau | y)", fontsize=8)
            label = "LA" if a == "laplace" else "EP"
            ax.set_title(f"n = {post.attrs.get('n', '?')}, {label}, N_imp = {int(k)}", fontsize=8)
            ax.tick_params(labelsize=7)
            if r == len(posts) - 1:
                ax.set_xlabel("tau", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    save_figure(fig, path)


_SCHEME_LABEL = {"aa": "AA", "surr": "SURR"}


def scheme_label(s: str) -> str:
    if s in _SCHEME_LABEL:
        return _SCHEME_LABEL[s]
    _, a, k = s.split("-")
    return f"PM {a.upper()} ({k})"


def pm_gpc_fig34(summaries, path, *, scale: str = "") -> None:
    """F&G Figs. 3-4: per data set and scheme, trace of log tau (one chain,
    thinned x10), its autocorrelation, and the PSRF evolution (median solid,
    97.5% red dashed)."""
    rows = [(s, sch) for s in summaries for sch in s["scheme"].values]
    fig, axes = plt.subplots(len(rows), 3, figsize=(10, 1.7 * len(rows) + 0.6), squeeze=False)
    for r, (s, sch) in enumerate(rows):
        d = s.sel(scheme=sch)
        name = s.attrs.get("dataset", "?")
        tag = f"{name} (n={s.attrs.get('n')}{', stand-in' if int(s.attrs.get('stand_in', 0)) else ''}), {scheme_label(str(sch))}"
        ax = axes[r, 0]
        ax.plot(d["thinned_draw"], d["trace"].isel(chain=0), lw=0.5, color="black")
        ax.set_ylabel("log tau", fontsize=7)
        ax.set_title(tag, fontsize=7, loc="left")
        ax = axes[r, 1]
        ax.bar(d["lag"], d["acf"], width=0.8, color="0.4")
        ax.set_ylim(-0.2, 1.0)
        ax.set_title("autocorrelation", fontsize=7)
        ax = axes[r, 2]
        ax.plot(d["iteration"], d["psrf_median"], color="black", lw=1.0, label="median")
        ax.plot(d["iteration"], d["psrf_975"], color="red", ls="--", lw=1.0, label="97.5% quantile")
        ax.axhline(1.1, color="0.6", lw=0.5, label="1.1")
        ax.set_title("PSRF", fontsize=7)
        ax.set_ylabel("PSRF of log tau", fontsize=7)
        if r == 0:
            ax.legend(fontsize=6, loc="upper right")
        for a in axes[r]:
            a.tick_params(labelsize=6)
    axes[-1, 0].set_xlabel("iteration after burn-in", fontsize=7)
    axes[-1, 1].set_xlabel("lag (draws)", fontsize=7)
    axes[-1, 2].set_xlabel("iteration after burn-in", fontsize=7)
    if scale:
        fig.suptitle(f"log tau: trace, autocorrelation, PSRF ({scale} scale)", fontsize=9)
    fig.tight_layout()
    save_figure(fig, path)
