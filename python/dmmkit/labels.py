"""Point labels placed without overlap, for the report's scatter plots.

matplotlib draws an annotation wherever it is told, so labels of nearby
points land on each other.  place_labels() puts each label with
matplotlib's own annotation (an offset in points from its point) at the
first of a fixed ring of candidate offsets whose rendered box (the
renderer's window extent of the text) meets no label already placed and
no obstacle (the points' markers, the legend), keeping it inside the axes
when it can.  The rings widen until a free place is found; a label moved
away from its point gets a thin leader line.  Deterministic: the same
figure gives the same placement.
"""

from __future__ import annotations

from matplotlib.transforms import Bbox

# candidate directions, in the order tried: right, above, below, left, then the diagonals
_DIRECTIONS = ((1, 0), (0, 1), (0, -1), (-1, 0), (1, 1), (1, -1), (-1, 1), (-1, -1))
_FIRST_PT = 8.0    # the nearest ring, points from the point (clear of the best config's star)
_STEP_PT = 9.0     # ring spacing, points
_RINGS = 24        # rings tried inside the axes, then again anywhere in the figure
_MARKER_PX = 6.0   # half-size of a point's marker box, pixels


def _align(dx: int, dy: int) -> tuple[str, str]:
    return ({1: "left", 0: "center", -1: "right"}[dx], {1: "bottom", 0: "center", -1: "top"}[dy])


def _text_box(ann, renderer) -> Bbox:
    """The box of the label's text alone (not its leader line)."""
    from matplotlib.text import Text
    ann.update_positions(renderer)  # the text's place from its point and offset (done at draw time otherwise)
    return Text.get_window_extent(ann, renderer)


def _inside(box: Bbox, area: Bbox) -> bool:
    return box.x0 >= area.x0 and box.y0 >= area.y0 and box.x1 <= area.x1 and box.y1 <= area.y1


def place_labels(ax, points, texts, fontsize: float = 7, obstacles=(), others=()) -> list:
    """Annotate each (x, y) data point of `points` with the matching text of
    `texts` so that no two labels' boxes intersect and no label covers a
    point's marker, the marker of one of `others` (more data points, not
    labelled) or one of `obstacles` (matplotlib artists, e.g. the legend).
    Call after the axes' limits and scales are final.  Returns the
    annotations."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    ax.get_xlim(), ax.get_ylim()  # settles autoscaled limits, so transData is final
    centres = [ax.transData.transform(p) for p in [*points, *others]]
    taken = [Bbox.from_bounds(cx - _MARKER_PX, cy - _MARKER_PX, 2 * _MARKER_PX, 2 * _MARKER_PX)
             for cx, cy in centres]
    taken += [o.get_window_extent(renderer) for o in obstacles]
    areas = (ax.get_window_extent(renderer), fig.bbox)
    placed = []
    for (x, y), text in zip(points, texts):
        probe = ax.annotate(text, (x, y), textcoords="offset points", xytext=(0, 0), fontsize=fontsize)
        found = None
        for area, ring, (dx, dy) in ((a, r, d) for a in areas for r in range(_RINGS) for d in _DIRECTIONS):
            dist = _FIRST_PT + _STEP_PT * ring
            ha, va = _align(dx, dy)
            probe.set_position((dx * dist, dy * dist))
            probe.set_ha(ha)
            probe.set_va(va)
            box = _text_box(probe, renderer)
            if _inside(box, area) and not any(box.overlaps(t) for t in taken):
                found = ((dx * dist, dy * dist), ha, va, box, ring)
                break
        probe.remove()
        if found is None:  # no free place in the whole figure: the last one tried
            found = (probe.xyann, probe.get_ha(), probe.get_va(), box, _RINGS)
        offset, ha, va, box, ring = found
        # a label moved off its point is tied to it by a thin leader line
        arrow = {"arrowstyle": "-", "lw": .4, "color": "#777777", "shrinkA": 0, "shrinkB": 2} if ring else None
        placed.append(ax.annotate(text, (x, y), textcoords="offset points", xytext=offset, ha=ha, va=va,
                                  fontsize=fontsize, arrowprops=arrow))
        taken.append(box)
    return placed
