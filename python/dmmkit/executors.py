"""Where the deterministic measurements of a sweep run.

An executor takes a picklable function and a list of items and yields
(index, result, error) as tasks finish, in any order.  Deterministic figures
(instruction counts, footprints, minimum arenas) do not depend on what else
the machine is doing, so they may run on many workers at once; timing
measurements never go through an executor (they run serially, interleaved).

* `LocalExecutor`: a thread pool (each task mostly waits on a subprocess) or
  a process pool, `-j N` workers (default: the number of CPUs).
* `RayExecutor`: Ray tasks on a cluster (`--address`), or on a Ray instance
  it starts on this machine.  `ray` is imported only here and only when this
  executor is chosen, so it stays an optional extra (`pip install
  ./python[ray]`).  Workers must see the same paths (tools, traces) as the
  driver, e.g. through a shared file system.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
from abc import ABC, abstractmethod
from typing import Any, Callable, Iterator, Sequence

from .errors import DmmkitError


class Executor(ABC):
    name = "abstract"

    @abstractmethod
    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[tuple[int, Any, BaseException | None]]:
        """Runs fn(item) for every item; yields (index, result, None) or
        (index, None, exception) as each finishes."""

    def close(self) -> None:
        pass

    def describe(self) -> dict:
        return {"executor": self.name}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, jobs: int | None = None, kind: str = "thread"):
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        if kind not in ("thread", "process"):
            raise ValueError("kind must be 'thread' or 'process'")
        self.kind = kind
        self._pool: cf.Executor | None = None

    def _get(self) -> cf.Executor:
        if self._pool is None:
            cls = cf.ThreadPoolExecutor if self.kind == "thread" else cf.ProcessPoolExecutor
            self._pool = cls(max_workers=self.jobs)
        return self._pool

    def map_unordered(self, fn, items):
        if not items:
            return
        pool = self._get()
        futs = {pool.submit(fn, it): i for i, it in enumerate(items)}
        try:
            for f in cf.as_completed(futs):
                i = futs[f]
                try:
                    yield i, f.result(), None
                except Exception as e:  # the task's own failure, reported per item
                    yield i, None, e
        finally:
            for f in futs:
                f.cancel()

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def describe(self):
        return {"executor": "local", "pool": self.kind, "workers": self.jobs}


class RayExecutor(Executor):
    name = "ray"

    def __init__(self, address: str | None = None, jobs: int | None = None):
        try:
            import ray  # noqa: F401  (optional dependency)
        except ImportError as e:
            raise DmmkitError(
                "--executor ray needs the optional dependency ray: pip install './python[ray]' "
                f"(import failed: {e})") from e
        self._ray = ray
        self.address = address
        self.jobs = jobs
        self._started = False
        if not ray.is_initialized():
            kw: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False}
            if address:
                kw["address"] = address
            else:
                kw["include_dashboard"] = False
                if jobs:
                    kw["num_cpus"] = jobs
            try:
                ray.init(**kw)
            except Exception as e:
                where = f"the Ray cluster at {address}" if address else "a local Ray instance"
                raise DmmkitError(f"cannot connect to {where}: {e}", 1) from e
            self._started = True

    def map_unordered(self, fn, items):
        if not items:
            return
        ray = self._ray
        remote = ray.remote(num_cpus=1)(fn)
        refs = {remote.remote(it): i for i, it in enumerate(items)}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for r in done:
                i = refs[r]
                try:
                    yield i, ray.get(r), None
                except Exception as e:
                    cause = getattr(e, "cause", None)
                    yield i, None, cause if isinstance(cause, BaseException) else e

    def close(self):
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False

    def describe(self):
        info = {"executor": "ray", "address": self.address or "local instance"}
        try:
            info["cluster_cpus"] = self._ray.cluster_resources().get("CPU")
        except Exception:
            pass
        return info


def make_executor(kind: str, jobs: int | None = None, address: str | None = None) -> Executor:
    if kind == "local":
        if address:
            raise DmmkitError("--address applies to --executor ray only")
        return LocalExecutor(jobs)
    if kind == "local-process":
        return LocalExecutor(jobs, kind="process")
    if kind == "ray":
        return RayExecutor(address, jobs)
    raise DmmkitError(f"unknown executor {kind!r} (local, ray)")
