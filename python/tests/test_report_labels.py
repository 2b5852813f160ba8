"""issue 26 item 9: the report's plot labels must not overlap.  Each test
renders a crowded figure through the report's own plotting function and
checks the rendered boxes (the renderer's window extents) of the labels."""

from __future__ import annotations

import itertools

import pytest
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

from dmmkit import report


@pytest.fixture
def kept(monkeypatch):
    """The figures the report would save, kept open (drawn) for the test."""
    figs: list = []

    def keep(fig, outdir, name):
        fig.canvas.draw()
        figs.append(fig)
        return name
    monkeypatch.setattr(report, "_save", keep)
    yield figs
    for f in figs:
        report.plt.close(f)


def _labels(ax) -> list[Bbox]:
    r = ax.figure.canvas.get_renderer()
    return [Text.get_window_extent(t, r) for t in ax.texts if isinstance(t, Annotation)]


def _crossing(boxes: list[Bbox]) -> list[tuple[int, int]]:
    return [(i, j) for (i, a), (j, b) in itertools.combinations(enumerate(boxes), 2) if a.overlaps(b)]


def _explore_doc(points) -> dict:
    configs = []
    for k, (ipo, arena) in enumerate(points):
        configs.append({"id": f"c{k}", "name": f"preset=tlsf,fit=best,split={k},coalesce=imm",
                        "aggregate": {"instr_per_op": ipo, "min_arena": arena}, "feasible": True,
                        "preset": True, "front": k % 3 == 0})
    return {"configs": configs, "settings": {"memory_metric": "min_arena"}, "traces": ["t"], "best": "c0"}


def test_crowded_scatter_labels_do_not_overlap(kept, tmp_path):
    """Twelve presets within a few per cent of each other (the report's
    halffit/tlsf/dlmalloc cluster, crowded): the labels of their points, and
    the legend, have pairwise disjoint boxes, all inside the figure."""
    pts = [(100 + 2 * (k % 4), 40_000 + 300 * (k // 4)) for k in range(12)] + [(400, 90_000), (380, 20_000)]
    names = report.plot_pareto(_explore_doc(pts), tmp_path, "x")
    assert names == ["x_pareto.png"]
    ax = kept[0].axes[0]
    boxes = _labels(ax)
    assert len(boxes) == len(pts)
    assert _crossing(boxes) == []
    legend = ax.get_legend().get_window_extent(kept[0].canvas.get_renderer())
    assert not any(b.overlaps(legend) for b in boxes)
    fig_box = kept[0].bbox
    assert all(fig_box.x0 <= b.x0 and b.x1 <= fig_box.x1 and fig_box.y0 <= b.y0 and b.y1 <= fig_box.y1
               for b in boxes)


def test_identical_points_get_separate_labels(kept, tmp_path):
    """The worst case: eight presets on one point."""
    report.plot_pareto(_explore_doc([(150, 64_000)] * 8), tmp_path, "x")
    boxes = _labels(kept[0].axes[0])
    assert len(boxes) == 8 and _crossing(boxes) == []


def _segments_px(ax) -> list[Bbox]:
    """The drawn extents of the error bars' whisker segments (clipped to the axes, as drawn)."""
    from matplotlib.collections import LineCollection
    axes_box = ax.get_window_extent(ax.figure.canvas.get_renderer())
    out = []
    for coll in ax.collections:
        if not isinstance(coll, LineCollection):
            continue
        for seg in coll.get_segments():
            px = ax.transData.transform(seg)
            b = Bbox.from_extents(px[:, 0].min(), px[:, 1].min() - .5, px[:, 0].max(), px[:, 1].max() + .5)
            clipped = Bbox.intersection(b, axes_box)
            if clipped is not None:
                out.append(clipped)
    return out


def test_bar_labels_clear_of_bars_and_whiskers(kept, tmp_path):
    """Ratios near 1 with intervals crossing 1 (the whisker used to run
    through the value printed beside the 1 line): no value label meets a
    whisker, a bar or another value label."""
    labs = [f"dmm:preset{k}" for k in range(10)]
    vals = [0.93, 1.04, 0.99, 1.12, 0.7, 1.6, 1.01, 0.98, 1.3, 0.85]
    doc = {"ranking": labs, "baseline": "glibc",
           "overall": {lab: {"warm_avg_ratio_geomean": v, "warm_avg_ratio_ci": [v * 0.6, v * 1.7]}
                       for lab, v in zip(labs, vals)}}
    assert report.plot_compare_ranking(doc, tmp_path, "r.png") == "r.png"
    ax = kept[0].axes[0]
    boxes = _labels(ax)
    assert len(boxes) == len(labs)
    assert _crossing(boxes) == []
    r = kept[0].canvas.get_renderer()
    bars = [p.get_window_extent(r) for p in ax.patches]
    whiskers = _segments_px(ax)
    assert whiskers, "the figure has no error bars to check against"
    hits = [(i, k) for i, b in enumerate(boxes) for k, w in enumerate(whiskers + bars) if b.overlaps(w)]
    assert hits == []
