"""Pictures: the learning curve of a run and GIFs of evaluation episodes (matplotlib, Agg).

Figures are made without pyplot, on an Agg canvas of their own, so drawing one never
changes the backend of the program around it (a notebook keeps showing its plots)."""

import matplotlib.pyplot as plt  # for the benchmarks' own figures (benchutil)
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from neuromotor.safe_write import atomic_open


def subplots(subplot_kw=None, nrows: int = 1, sharex: bool = False, **figure_kw):
    """(figure, axes) on an Agg canvas, outside pyplot."""
    fig = Figure(**figure_kw)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, sharex=sharex, subplot_kw=subplot_kw)


def learning_curve(metrics: list, path, title: str) -> None:
    agents = sorted({r["agent"] for r in metrics})
    fig, ax = subplots(figsize=(7, 4.5))
    by_step = {}
    for k in agents:
        rows = sorted((r for r in metrics if r["agent"] == k), key=lambda r: r["step"])
        xs, ys = [r["step"] for r in rows], [r["eval_return_mean"] for r in rows]
        ax.plot(xs, ys, lw=1 if len(agents) > 1 else 2, alpha=0.5 if len(agents) > 1 else 1,
                label=f"seed {rows[0]['seed']}" if len(agents) <= 8 else None)
        for x, y in zip(xs, ys):
            by_step.setdefault(x, []).append(y)
    if len(agents) > 1:
        steps = sorted(by_step)
        ax.plot(steps, [sum(by_step[s]) / len(by_step[s]) for s in steps], "k", lw=2.5, label="mean")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("deterministic evaluation return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save_png(fig, path)


def save_png(fig, path, dpi: int = 100, follow: bool = False) -> None:
    """Write a figure atomically (a reader never sees half a PNG) and close it; `follow`: a
    path the user named, which may be a link to a regular file."""
    try:
        fig.tight_layout()
        with atomic_open(path, follow=follow) as f:
            fig.savefig(f, format="png", dpi=dpi)
    finally:
        plt.close(fig)


def episode_gif(draw, states, path, fps: int = 20, title: str = "", projection: "str | None" = None) -> None:
    """Animate `draw(ax, state_row)` over a trajectory of env states into a GIF.

    `draw` creates its artists on the first call and moves them afterwards; each
    frame is one Agg canvas draw handed to Pillow (much faster than savefig per frame).
    `projection` "3d" draws on 3-D axes.
    """
    from PIL import Image

    fig, ax = subplots(subplot_kw={"projection": projection} if projection else None,
                       figsize=(3.5, 3.5) if projection else (2.5, 2.5), dpi=72)
    label = ax.set_title("", fontsize=8)
    frames = []
    for i, state in enumerate(states):
        draw(ax, state)
        label.set_text(f"{title} t={i}")
        fig.canvas.draw()
        frames.append(Image.fromarray(np.asarray(fig.canvas.buffer_rgba())[..., :3]).quantize(16))
    with atomic_open(path, follow=True) as f:  # a path the user named
        frames[0].save(f, format="GIF", save_all=True, append_images=frames[1:], duration=1000 // fps, loop=0)


def sweep_returns(groups: list, path, title: str) -> None:
    """[(configuration label, [final return per seed])]: each seed a dot, the mean a bar."""
    fig, ax = subplots(figsize=(max(5.0, 0.6 * len(groups) + 2), 4.5))
    for i, (_, values) in enumerate(groups):
        jitter = np.linspace(-0.15, 0.15, len(values)) if len(values) > 1 else [0.0]
        ax.scatter(i + np.asarray(jitter), values, s=14, alpha=0.6, color="tab:blue")
        ax.hlines(np.mean(values), i - 0.3, i + 0.3, color="k", lw=2)
    ax.set_xticks(range(len(groups)), [g[0] for g in groups], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("final evaluation return")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    save_png(fig, path)


def episode_plot(plot, rows: int, states, path, title: str = "") -> None:
    """`plot(axes, states, title)` of an env (its episode over time, on `rows` axes) as a PNG."""
    fig, axes = subplots(nrows=rows, figsize=(7, 2.5 * rows), sharex=True)
    plot(np.atleast_1d(axes), np.asarray(states), title)
    save_png(fig, path, follow=True)  # a path the user named
