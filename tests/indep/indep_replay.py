"""The replay of tests/indep/indep_sim.py: CPU and GPU timelines of every rank, NCCL rendezvous."""
import math, random
from collections import deque

from indep_model import KERNELS, NCCL_NEW, NCCL_OLD, K, COLL, CPU, MCPY, SYNC, MSTART, MEND, ITER, build_program


class RankState:
    __slots__ = ('c', 'g', 'pc', 'it', 'dead', 'rng', 'speed', 'kern', 'rt', 'nvtx', 'mcpy',
                 'sync', 'corr', 'streams', 'next_stream', 'stopped_at', 'blocked', 'iter_t')


def transfer_ns(job, kind_coll, members, nbytes, it):
    hosts = sorted({job.host(m) for m in members})
    n = len(members)
    inter = len(hosts) > 1
    bw = (job.a.inter_gbps if inter else job.a.intra_gbps) * 1e9
    lat = 20e3 if inter else 8e3
    if inter:
        edges = {tuple(sorted((hosts[i], hosts[(i + 1) % len(hosts)]))) for i in range(len(hosts))}
        for f in job.faults:
            if f['kind'] == 'slow_link' and it >= f['iter'] and tuple(f['hosts']) in edges:
                bw /= f['factor']
    if kind_coll == 'AllReduce':
        vol = 2.0 * (n - 1) / n * nbytes
    elif kind_coll in ('ReduceScatter', 'AllGather'):
        vol = (n - 1) / n * nbytes
    else:
        vol = nbytes
    return lat + vol / bw * 1e9


def simulate(job):
    a = job.a
    progs = [build_program(job, r) for r in range(job.n)]
    st = []
    for r in range(job.n):
        s = RankState()
        s.c = job.rng.randint(0, 300000); s.g = 0; s.pc = 0; s.it = -1; s.dead = None
        s.rng = random.Random(a.seed * 7919 + r)
        s.speed = min(1.02, max(0.98, s.rng.gauss(1.0, 0.007)))   # GPUs of one model differ a little
        s.kern, s.rt, s.nvtx, s.mcpy, s.sync = [], [], [], [], []
        s.corr = s.rng.randint(1000, 90000); s.streams = {}; s.stopped_at = None; s.blocked = None
        s.iter_t = {}
        st.append(s)
    fby = {}
    for f in job.faults:
        if 'rank' in f: fby.setdefault(f['rank'], []).append(f)
    pending = {}                                   # (commkey, seq) -> {rank: arrival record}
    hold = {}                                      # (rank, iter) -> ns others waited on it (last arriver)
    crng = random.Random(a.seed * 31 + 5)

    def stream_of(s, r, key):
        if key not in s.streams:                   # lazy communicator creation: first-use order
            s.next_stream += s.rng.randint(1, 6)
            s.streams[key] = s.next_stream
        return s.streams[key]

    for r, s in enumerate(st):
        s.next_stream = 12 + (200 * (r % job.G) if a.files == 'host' else 0)
        s.streams['compute'] = 7 + (8 * (r % job.G) if a.files == 'host' else 0)

    def gpu_factor(r, s):
        f = s.speed * (1.25 if s.it == 0 else 1.0)
        for x in fby.get(r, ()):
            if x['kind'] == 'slow_gpu' and s.it >= x['iter']:
                f *= x['factor']
        return f

    def launch(s, api, cls):
        s.corr += s.rng.randint(1, 3)
        t0 = s.c
        d = s.rng.randint(3500, 9000) if cls == 0 else s.rng.randint(6000, 14000)
        s.rt.append((t0, t0 + d, s.corr, api, cls))
        s.c = t0 + d
        return s.corr

    def resolve(key):
        arr = pending.pop(key)
        kind, members = job.comms[key[0]]
        any_rec = next(iter(arr.values()))
        it = max(st[m].it for m in members)
        tr = transfer_ns(job, any_rec[4], members, any_rec[5], it) * crng.gauss(1.0, 0.01)
        amax = max(v[0] for v in arr.values())
        order = sorted(arr.items(), key=lambda kv: kv[1][0])
        if len(order) > 1:
            last, prev = order[-1], order[-2]
            hk = (last[0], st[last[0]].it)
            hold[hk] = hold.get(hk, 0) + (last[1][0] - prev[1][0])
        for m, (arrival, corr, stream, kname, _c, _b) in arr.items():
            end = int(amax + tr + crng.randint(0, 2000))
            sm = st[m]
            sm.kern.append((arrival, end, stream, corr, kname, 'nccl'))
            sm.g = end
            sm.pc += 1
            sm.blocked = None
        return members

    def run(r, queue):
        s = st[r]; ops = progs[r]; rng = s.rng
        while s.pc < len(ops):
            op = ops[s.pc]; code = op[0]
            if code == K:
                corr = launch(s, 'cuLaunchKernelEx' if KERNELS[op[1]][0].startswith('nvjet') and job.new
                              else 'cudaLaunchKernel_v7000', 1 if KERNELS[op[1]][0].startswith('nvjet') and job.new else 0)
                start = max(s.g, s.c + rng.randint(1000, 3000))
                dur = KERNELS[op[1]][4] * 1000 * gpu_factor(r, s) * math.exp(rng.gauss(0, 0.02))
                s.kern.append((start, start + int(dur), s.streams['compute'], corr, op[1], 'k'))
                s.g = start + int(dur)
                s.c += rng.randint(8000, 30000)     # python/framework time between launches
                s.pc += 1
            elif code == COLL:
                if s.blocked is not None:
                    return                        # still waiting for the others
                key, cname, dtype, nbytes, api = op[1], op[2], op[3], op[4], op[5]
                t0 = s.c
                s.c += rng.randint(4000, 12000)
                corr = launch(s, 'cuLaunchKernelEx' if job.new else 'cudaLaunchKernelExC_v11060', 1 if job.new else 0)
                s.c += rng.randint(1500, 4000)
                s.nvtx.append((t0, s.c, api, 1))
                arrival = max(s.g, s.c + rng.randint(1000, 4000))
                kname = (NCCL_NEW if job.new else NCCL_OLD)[(cname, dtype)]
                pend = pending.setdefault(key, {})
                pend[r] = (arrival, corr, stream_of(s, r, key[0]), kname, cname, nbytes)
                s.blocked = key
                s.c += rng.randint(5000, 20000)
                if len(pend) == len(job.comms[key[0]][1]):
                    for m in resolve(key):
                        if m != r: queue.append(m)
                else:
                    return
            elif code == CPU:
                base = rng.uniform(0.4e6, 1.6e6) + (30e6 if s.it == 0 else 0)
                for x in fby.get(r, ()):
                    if x['kind'] == 'host_delay' and s.it >= x['iter']:
                        base += x['ms'] * 1e6
                s.c += int(base)
                s.pc += 1
            elif code == MCPY:
                api = 'cudaMemcpyAsync_v3020'
                corr = launch(s, api, 0)
                start = max(s.g, s.c + rng.randint(1000, 3000))
                dur = int(op[2] / 20e9 * 1e9) + rng.randint(1500, 3000)
                s.mcpy.append((start, start + dur, s.streams['compute'], corr, op[2], op[1]))
                s.g = start + dur
                s.c += rng.randint(3000, 8000)
                s.pc += 1
            elif code == SYNC:
                t0 = s.c
                s.corr += 1
                end = max(s.c, s.g) + rng.randint(2000, 6000)
                s.rt.append((t0, end, s.corr, 'cudaStreamSynchronize_v3020', 0))
                s.sync.append((max(t0, s.g - 1000), end - 1000, s.streams['compute'], s.corr))
                s.c = end + rng.randint(5000, 20000)
                s.pc += 1
            elif code == MSTART:
                s.iter_t[op[1]] = [s.c, None]
                s.pc += 1
            elif code == MEND:
                s.iter_t[op[1]][1] = s.c
                s.pc += 1
            elif code == ITER:
                s.it = op[1]
                for x in fby.get(r, ()):
                    if x['kind'] in ('crash', 'stuck') and s.it >= x['iter']:
                        s.dead = x['kind']; s.stopped_at = s.c
                        return
                s.pc += 1
        s.stopped_at = max(s.c, s.g)

    queue = deque(range(job.n))
    while queue:
        run(queue.popleft(), queue)
    blocked = sorted(r for r, s in enumerate(st) if s.blocked is not None)
    dead = sorted(r for r, s in enumerate(st) if s.dead)
    if pending and not dead:
        raise SystemExit('internal error: deadlock without a planted hang (%d ops pending)' % len(pending))
    # ranks blocked on the GPU: their CPU goes on launching until the step's stream synchronize
    for r in blocked:
        s = st[r]; ops = progs[r]; rng = s.rng
        s.pc += 1
        while s.pc < len(ops) and ops[s.pc][0] != SYNC:
            code = ops[s.pc][0]
            if code == K:
                launch(s, 'cudaLaunchKernel_v7000', 0); s.c += rng.randint(8000, 30000)
            elif code == COLL:
                t0 = s.c; s.c += rng.randint(4000, 12000)
                launch(s, 'cuLaunchKernelEx' if job.new else 'cudaLaunchKernelExC_v11060', 1 if job.new else 0)
                s.c += rng.randint(1500, 4000)
                s.nvtx.append((t0, s.c, ops[s.pc][5], 1))
            elif code == MCPY:
                launch(s, 'cudaMemcpyAsync_v3020', 0)
            s.pc += 1
        s.stopped_at = s.c
    return st, pending, hold, blocked, dead, progs

