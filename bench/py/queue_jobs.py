"""The job functions of bench/py/queue_bench.py's rq and arq rows: a job
records when it started (how long after ts, in ns) or counts itself."""
import time


def _rq_conn():
    from rq import get_current_job
    return get_current_job().connection


def record(ts_ns, res, _delayed=0):
    """rq: how late this job started after ts_ns (an offer's time or a due
    time), pushed onto res."""
    now = time.time_ns()
    _rq_conn().rpush(res, now - ts_ns)


def tick(key):
    _rq_conn().incr(key)


async def arq_record(ctx, ts_ns, res, _delayed=0):
    now = time.time_ns()
    await ctx["redis"].rpush(res, now - ts_ns)


async def arq_tick(ctx, key):
    await ctx["redis"].incr(key)
