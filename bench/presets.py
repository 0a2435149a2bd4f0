"""Overview presets: what the first click costs, computed (models warm) and from the cache.

    python bench/presets.py [--reps 5]

Builds the app (offline), loads each preset's models, then times each preset's event
function three ways: computed with the models already loaded (what a click costs after
`--warm` without the cache), and answered by the wrapped function once the cache holds
it (what a click costs now). The cold figure includes loading the preset's models.
Engine calls only: add ~70 ms of browser round trip for what a person sees.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import timed  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    from engine import device, sources

    sources.set_offline(True)
    device.configure_threads()
    import app  # noqa: F401
    from app.main import build_app

    demo = build_app()
    cache = demo.ptx_presets
    wrapped = {id(fn): next(b.fn for b in demo.fns.values() if b._id == fid)
               for fid, fn in cache.wrapped.items()}
    print(f"{'preset':<62} {'cold s':>7} {'warm ms':>9} {'cached ms':>10}")
    for job in cache.jobs:
        t0 = time.perf_counter()
        try:
            job.fn(*job.args)
        except Exception as exc:  # noqa: BLE001 - report and go on
            print(f"{job.label[:62]:<62} failed: {exc}")
            continue
        cold = time.perf_counter() - t0
        warm = timed(lambda j=job: j.fn(*j.args), repeat=args.reps, warmup=0)["median_ms"]
        saved, cache.jobs = cache.jobs, [job]
        cache.prefetch()
        cache.jobs = saved
        cached = timed(lambda j=job: wrapped[id(j.fn)](*j.args), repeat=args.reps, warmup=0)["median_ms"]
        print(f"{job.label[:62]:<62} {cold:7.2f} {warm:9.1f} {cached:10.2f}", flush=True)


if __name__ == "__main__":
    main()
