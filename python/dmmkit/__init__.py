"""dmmkit front end: drives the native dmmkit tools (dmm-replay, dmm-analyse,
dmm-trace, the LD_PRELOAD recorder) and turns their JSON into rankings,
Pareto fronts, reports and generated allocators.  See docs/frontend.md."""

__version__ = "0.1.0"
