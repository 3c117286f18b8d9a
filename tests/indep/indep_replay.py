"""The replay of tests/indep/indep_sim.py: CPU and GPU timelines of every rank, NCCL rendezvous.

Each rank has a CPU clock `c` (the Python thread that launches) and a compute-stream clock `g`. Blocking
collectives (TP, p2p, non-overlapped DP) make the compute stream wait for the NCCL kernel. Overlapped DP
buckets (`--dp-overlap`) run on the DP communicator's own stream: a bucket reaches the GPU when the event
recorded on the compute stream after its layers has fired and the previous bucket on that stream is done;
only the optimizer's wait joins the streams again.
"""
import math, random
from collections import deque

from indep_model import (KERNELS, NCCL_NEW, NCCL_OLD, K, COLL, CPU, MCPY, SYNC, MSTART, MEND, ITER, ACOLL, WAIT,
                         STORM, PCOPY, GC, JIT, APP, PWAIT, build_program)


MASK64 = (1 << 64) - 1


class TracedRandom(random.Random):
    """A rank's own stream (random.Random(seed), same values) that also keeps a digest of every draw, tagged with
    the program position that consumed it: two runs whose digests agree gave that rank the same noise at the
    same places (tests/indep/check_what_if.py compares a faulty run with its counterfactual this way). Both
    random() and getrandbits() are overridden, so randint/choice keep the getrandbits path of random.Random."""

    def __init__(self, seed, owner):
        self.owner, self.digest, self.draws = owner, 1469598103934665603, 0
        super().__init__(seed)

    def random(self):
        x = super().random()
        self.digest = ((self.digest ^ hash((self.owner.pc, x))) * 1099511628211) & MASK64
        self.draws += 1
        return x

    def getrandbits(self, k):
        x = super().getrandbits(k)
        self.digest = ((self.digest ^ hash((self.owner.pc, x))) * 1099511628211) & MASK64
        self.draws += 1
        return x


class RankState:
    __slots__ = ('c', 'g', 'pc', 'it', 'dead', 'rng', 'speed', 'kern', 'rt', 'nvtx', 'mcpy',
                 'sync', 'corr', 'streams', 'next_stream', 'stopped_at', 'blocked', 'iter_t',
                 # added for overlap, storms, copies, GC, JIT
                 'backlog', 'busy', 'afree', 'aend', 'inflight', 'nbuck', 'sync_x', 'nvtx_txt', 'seen',
                 'storms', 'gcs', 'h2d', 'it_start', 'jit', 'pbw', 'copy_api', 'orphans',
                 # pipeline truth: microbatch compute kernels (start, end, tag), TP / p2p kernels (start, end, it, kind)
                 'pwork', 'pnet', 'p2pdone')


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
    t = lat + vol / bw * 1e9
    if kind_coll == 'SendRecv':                    # slow_p2p: every pipeline transfer slower
        for f in job.faults:
            if f['kind'] == 'slow_p2p' and it >= f['iter']:
                t *= f['factor']
    return t


JIT_RANGES = [  # (name, start as a share of the compile, end share); names as nvFuser emits them (sample nvfuser_report1)
    ('GpuLower::lower', 0.0005, 0.036), ('generateCudaKernel', 0.097, 0.099),
    ('executor_utils::NVRTC', 0.104, 0.9985), ('executor_utils::NvrtcCreateProgram', 0.1042, 0.1046),
    ('executor_utils::Nvrtc::CompileProgram', 0.1047, 0.998)]


def simulate(job):
    a = job.a
    # hooks for tests/indep/indep_scaling.py: its own (light) programs, a fabric cost model and per-op noise;
    # absent on the Job of indep_sim.py, so its runs are unchanged
    progs = [(getattr(job, 'program_builder', None) or build_program)(job, r) for r in range(job.n)]
    xfer = getattr(job, 'transfer_model', None) or transfer_ns
    coll_noise = getattr(job, 'coll_noise', 0.01)
    sigma = a.jitter / 100.0
    st = []
    for r in range(job.n):
        s = RankState()
        s.c = job.rng.randint(0, 300000); s.g = 0; s.pc = 0; s.it = -1; s.dead = None
        s.pc = 0
        s.rng = TracedRandom(a.seed * 7919 + r, s)    # the rank's own stream (same values as Random)
        s.speed = min(1.02, max(0.98, s.rng.gauss(1.0, 0.007)))   # GPUs of one model differ a little
        s.kern, s.rt, s.nvtx, s.mcpy, s.sync = [], [], [], [], []
        s.corr = s.rng.randint(1000, 90000); s.streams = {}; s.stopped_at = None; s.blocked = None
        s.iter_t = {}
        s.backlog, s.busy, s.afree, s.aend, s.inflight, s.nbuck = {}, set(), {}, 0, 0, 0
        s.sync_x, s.nvtx_txt, s.seen, s.storms, s.gcs, s.h2d, s.it_start = [], [], set(), [], [], {}, {}
        s.jit, s.orphans = None, []
        s.pwork, s.pnet, s.p2pdone = [], [], {}
        xr = random.Random(a.seed * 6151 + r * 97 + 3)            # draws of the new features only
        s.pbw = xr.uniform(7e9, 11e9)                              # pageable H2D through the staging buffer
        s.copy_api = 'torch' if (a.seed + r // max(1, job.G)) % 2 == 0 else 'cuda'
        st.append(s)
    pending = {}                                   # (commkey, seq) -> {rank: arrival record}
    hold = {}                                      # (rank, iter) -> ns others waited on it (last arriver)
    crng = random.Random(a.seed * 31 + 5)
    # the shared stream is drawn in the order ops complete in the replay's logical schedule (ranks run until they
    # block; an op resolves when its last member issues it), which timing never changes; noise_log keeps what
    # each op drew, so that check_what_if.py can confirm a counterfactual drew the same
    noise_log = job.noise_log = {}
    bracketed = {r for r in range(job.n) if job.on('nccl_bracketed', r)}
    ev_api = 'cudaEventRecordWithFlags_v11010' if job.new else 'cudaEventRecord_v3020'

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
        for x in job.on('slow_gpu', r):
            if s.it >= x['iter']:
                f *= x['factor']
        return f

    lead = int(a.cpu_lead_ms * 1e6)

    def launch(s, api, cls, dur=None):
        s.corr += s.rng.randint(1, 3)
        t0 = s.c
        d = dur if dur is not None else (s.rng.randint(3500, 9000) if cls == 0 else s.rng.randint(6000, 14000))
        if lead and s.g - t0 > lead:               # launch queue full: the call returns when the GPU catches up
            d += s.g - lead - t0
        s.rt.append((t0, t0 + d, s.corr, api, cls))
        s.c = t0 + d
        return s.corr

    def kernel_api(role):
        ex = KERNELS[role][0].startswith('nvjet') and job.new
        return ('cuLaunchKernelEx', 1) if ex else ('cudaLaunchKernel_v7000', 0)

    def nccl_api():
        return ('cuLaunchKernelEx', 1) if job.new else ('cudaLaunchKernelExC_v11060', 0)

    def small_kernel(s, role, stream, start, nbytes):
        """pack / unpack kernels: memory bound copies of the collective's buffer"""
        dur = int(nbytes / 1.3e12 * 1e9) + s.rng.randint(3000, 6000)
        return (start, start + dur, stream, None, role, 'k')

    def wait_event(s, stream):
        """cudaStreamWaitEvent: a runtime row and a CUPTI stream-wait-event synchronization record"""
        t0 = s.c
        corr = launch(s, 'cudaStreamWaitEvent_v3020', 0, s.rng.randint(800, 3000))
        s.sync_x.append((t0, s.c, stream, corr, 2))

    def promote(r, comm, work):
        """the head of rank r's backlog on an async stream reaches the GPU"""
        s = st[r]
        if comm in s.busy or not s.backlog.get(comm):
            return
        key, rec = s.backlog[comm].popleft()
        rec['arr'] = max(rec['ready'], s.afree.get(comm, 0))
        s.busy.add(comm)
        pend = pending.setdefault(key, {})
        pend[r] = rec
        if len(pend) == len(job.comms[key[0]][1]):
            work.append(key)

    def resolve(key, queue, current):
        work = [key]
        while work:
            k = work.pop()
            arr = pending.pop(k)
            kind, members = job.comms[k[0]]
            any_rec = next(iter(arr.values()))
            it = max(v['it'] for v in arr.values())
            noise = crng.gauss(1.0, coll_noise)
            tr = xfer(job, any_rec['cname'], members, any_rec['nbytes'], it) * noise
            if any_rec['async'] and not any_rec.get('p2p'):
                tr *= 1.1                          # shares SMs and memory bandwidth with the backward kernels
            amax = max(v['arr'] for v in arr.values())
            order = sorted(arr.items(), key=lambda kv: kv[1]['arr'])
            if len(order) > 1 and not any_rec.get('p2p'):   # (an early irecv waits on its own stream, nobody stalls)
                last, prev = order[-1], order[-2]
                hk = (last[0], last[1]['it'])
                hold[hk] = hold.get(hk, 0) + (last[1]['arr'] - prev[1]['arr'])
            woken = set()
            jit_end = [crng.randint(0, 2000) for _ in arr]
            noise_log[k] = (noise, tuple(sorted(zip(arr, jit_end))))
            for (m, rec), dj in zip(arr.items(), jit_end):
                end = int(amax + tr + dj)
                sm = st[m]
                sm.kern.append((rec['arr'], end, rec['stream'], rec['corr'], rec['kname'], 'nccl'))
                if kind in ('tp', 'pp'):
                    sm.pnet.append((rec['arr'], end, rec['it'], kind))
                if rec.get('unpack') is not None:   # copy-out on the same stream, after the collective
                    u = small_kernel(sm, 'unpack', rec['stream'], end + sm.rng.randint(1000, 3000), rec['nbytes'])
                    sm.kern.append(u[:3] + (rec['unpack'],) + u[4:])
                    end = u[1]
                if rec['async']:
                    comm = k[0]
                    sm.afree[comm] = end
                    sm.aend = max(sm.aend, end)
                    sm.busy.discard(comm)
                    sm.inflight -= 1
                    promote(m, comm, work)
                    if rec.get('p2p'):               # an isend/irecv done: wake a req.wait() on it
                        sm.p2pdone[k] = end
                        if sm.blocked == ('p2p', k):
                            sm.g = max(sm.g, end)
                            sm.blocked = None
                            sm.pc += 1
                            woken.add(m)
                    if sm.blocked == 'wait' and sm.inflight == 0:
                        sm.g = max(sm.g, sm.aend)
                        sm.blocked = None
                        sm.pc += 1
                        woken.add(m)
                else:
                    sm.g = end
                    sm.pc += 1
                    sm.blocked = None
                    woken.add(m)
            queue.extend(m for m in members if m in woken and m != current)

    def issue_coll(r, s, op, asyn):
        """CPU side of a collective: NVTX range around the NCCL launch (plus event rows / pack kernel)"""
        rng = s.rng
        key, cname, dtype, nbytes, api = op[1], op[2], op[3], op[4], op[5]
        brk = r in bracketed and cname != 'SendRecv' and not asyn   # (overlapped buckets are not bracketed)
        early = asyn or brk
        stream = stream_of(s, r, key[0]) if early else None   # (else after the launch: keeps old seeds' draws)
        ready = s.g
        if asyn:                                   # ProcessGroupNCCL: NCCL stream waits for the current stream
            launch(s, ev_api, 0, rng.randint(2000, 4000))
            wait_event(s, stream)
        pack_end = None
        if brk:
            pc = launch(s, *kernel_api('pack'))
            kp = small_kernel(s, 'pack', stream, max(s.g, s.c + rng.randint(1000, 3000)), nbytes)
            s.kern.append(kp[:3] + (pc,) + kp[4:])
            pack_end = kp[1]
            s.c += rng.randint(3000, 9000)
        t0 = s.c
        s.c += rng.randint(4000, 12000)
        corr = launch(s, *nccl_api())
        s.c += rng.randint(1500, 4000)
        s.nvtx.append((t0, s.c, api, 1))
        arrival = max(s.g, s.c + rng.randint(1000, 4000))
        if pack_end is not None:
            arrival = max(arrival, pack_end)
        unpack = None
        if pack_end is not None:
            s.c += rng.randint(2000, 6000)
            unpack = launch(s, *kernel_api('unpack'))
        kname = (NCCL_NEW if job.new else NCCL_OLD)[(cname, dtype)]
        if stream is None:
            stream = stream_of(s, r, key[0])
        rec = {'arr': arrival, 'corr': corr, 'stream': stream, 'kname': kname, 'cname': cname, 'nbytes': nbytes,
               'it': s.it, 'async': asyn, 'unpack': unpack}
        if asyn:
            rec['ready'] = max(ready, arrival)
            launch(s, ev_api, 0, rng.randint(2000, 4000))     # end-of-work event on the NCCL stream
        rec['launch'] = t0
        return key, rec

    def run(r, queue):
        s = st[r]; ops = progs[r]; rng = s.rng
        while s.pc < len(ops):
            if s.blocked is not None:
                return
            op = ops[s.pc]; code = op[0]
            if code == K:
                api, cls = kernel_api(op[1])
                dur_l = None
                if a.one_shot and op[1] not in s.seen:      # lazy loading: first launch of a kernel loads its module
                    s.seen.add(op[1])
                    if s.rng.random() < 0.4:
                        dur_l = s.rng.randint(1_000_000, 9_000_000)
                corr = launch(s, api, cls, dur_l)
                start = max(s.g, s.c + rng.randint(1000, 3000))
                dur = KERNELS[op[1]][4] * 1000 * gpu_factor(r, s) * math.exp(rng.gauss(0, sigma))
                if sigma > 0.02 and rng.random() < (sigma - 0.02) / 10:   # heavier tail when asked to be noisy
                    dur *= rng.uniform(1.2, 1.8)
                if len(op) > 2:                     # stage_imbalance / --balanced-stages scale; microbatch tag
                    dur *= op[2]
                    s.pwork.append((start, start + int(dur), op[3]))
                s.kern.append((start, start + int(dur), s.streams['compute'], corr, op[1], 'k'))
                s.g = start + int(dur)
                s.c += rng.randint(8000, 30000)     # python/framework time between launches
                s.pc += 1
            elif code == COLL:
                key, rec = issue_coll(r, s, op, False)
                pend = pending.setdefault(key, {})
                pend[r] = rec
                s.blocked = key
                s.c += rng.randint(5000, 20000)
                if len(pend) == len(job.comms[key[0]][1]):
                    resolve(key, queue, r)
                else:
                    return
            elif code == ACOLL:
                key, rec = issue_coll(r, s, op, True)
                comm = key[0]
                s.backlog.setdefault(comm, deque()).append((key, rec))
                s.inflight += 1
                s.nbuck += 1
                s.c += rng.randint(5000, 20000)
                s.pc += 1
                work = []
                promote(r, comm, work)
                if work:
                    resolve(work[0], queue, r)
            elif code == APP:                       # isend / irecv: on the link's stream; the compute stream goes on
                key, rec = issue_coll(r, s, op, True)
                rec['p2p'] = True
                comm = key[0]
                s.backlog.setdefault(comm, deque()).append((key, rec))
                s.inflight += 1
                s.c += rng.randint(5000, 20000)
                s.pc += 1
                work = []
                promote(r, comm, work)
                if work:
                    resolve(work[0], queue, r)
            elif code == PWAIT:                     # req.wait() of an irecv: the compute stream waits for it
                wait_event(s, s.streams['compute'])
                if op[1] in s.p2pdone:
                    s.g = max(s.g, s.p2pdone[op[1]])
                    s.pc += 1
                else:
                    s.blocked = ('p2p', op[1])
                    return
            elif code == WAIT:
                for _ in range(s.nbuck):            # work.wait() per bucket: compute stream waits on the NCCL stream
                    wait_event(s, s.streams['compute'])
                s.nbuck = 0
                if s.inflight == 0:
                    s.g = max(s.g, s.aend)
                    s.pc += 1
                else:
                    s.blocked = 'wait'
                    return
            elif code == CPU:
                base = rng.uniform(0.4e6, 1.6e6) + (30e6 if s.it == 0 else 0)
                for x in job.on('host_delay', r):
                    if s.it >= x['iter']:
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
            elif code == PCOPY:
                pageable_copy(r, s, op[1])
                s.pc += 1
            elif code == STORM:
                storm(r, s, op[1])
                s.pc += 1
            elif code == GC:
                c0, g0 = s.c, s.g
                s.c += int(op[1] * 1e6 * rng.uniform(0.9, 1.1))
                s.gcs.append((s.it, c0, s.c, max(0, s.c + 2000 - max(g0, c0))))
                s.pc += 1
            elif code == JIT:
                jit(r, s)
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
                s.it_start[s.it] = s.c
                for x in job.faults:
                    if x['kind'] in ('crash', 'stuck') and x['rank'] == r and s.it >= x['iter']:
                        s.dead = x['kind']; s.stopped_at = s.c
                        return
                s.pc += 1
        s.stopped_at = max(s.c, s.g)

    def host_sync(s):
        """cudaStreamSynchronize inside the step (after .item() or a pageable copy)"""
        t0 = s.c
        s.corr += 1
        end = max(s.c, s.g) + s.rng.randint(2000, 5000)
        s.rt.append((t0, end, s.corr, 'cudaStreamSynchronize_v3020', 0))
        s.sync_x.append((max(t0, s.g - 1000), end - 1000, s.streams['compute'], s.corr, 3))
        s.c = end + s.rng.randint(3000, 10000)

    def pageable_copy(r, s, nbytes):
        """synchronous H2D from pageable memory, in chunks: the host waits for each (staging buffer)"""
        rng = s.rng
        left = nbytes
        while left > 0:
            nb = min(left, 64 << 20)
            left -= nb
            start = max(s.g, s.c + rng.randint(3000, 8000))
            dur = int(nb / s.pbw * 1e9) + rng.randint(5000, 15000)
            t0 = s.c
            api = 'cudaMemcpyAsync_v3020' if s.copy_api == 'torch' else 'cudaMemcpy_v3020'
            s.corr += rng.randint(1, 3)
            s.rt.append((t0, start + dur + rng.randint(2000, 5000), s.corr, api, 0))
            s.mcpy.append((start, start + dur, s.streams['compute'], s.corr, nb, 1, 0, 2))
            s.h2d[s.it] = s.h2d.get(s.it, 0) + dur
            s.g = start + dur
            s.c = s.rt[-1][1]
            if s.copy_api == 'torch':               # at::native copy_ from pageable memory: memcpy_and_sync
                host_sync(s)
            s.c += rng.randint(20000, 200000)       # the next tensor from the dataset / numpy

    def storm(r, s, count):
        """loss.item() then COUNT tiny element-wise kernels, each with its own launch: the GPU waits for the host"""
        rng = s.rng
        corr = launch(s, 'cudaMemcpyAsync_v3020', 0)
        start = max(s.g, s.c + rng.randint(1000, 3000))
        dur = rng.randint(1500, 3000)
        s.mcpy.append((start, start + dur, s.streams['compute'], corr, 4, 2))
        s.g = start + dur
        host_sync(s)
        g0, busy = None, 0
        roles = ('tiny_mul', 'tiny_add', 'tiny_fill')
        for i in range(count):
            corr = launch(s, 'cudaLaunchKernel_v7000', 0, rng.randint(8000, 11000))
            start = max(s.g, s.c + rng.randint(1000, 2500))
            d = rng.randint(2000, 5000)
            s.kern.append((start, start + d, s.streams['compute'], corr, roles[i % 3], 'k'))
            if g0 is None: g0 = start
            s.g = start + d
            busy += d
            s.c += rng.randint(1000, 3000)
        if count:
            s.storms.append((s.it, count, g0, s.g, busy))

    def jit(r, s):
        """nvFuser-style one-time compile (NVRTC) and module loading before the first kernels"""
        rng = s.rng
        t = s.c + rng.randint(200000, 900000)
        D = int(rng.uniform(200e6, 400e6))
        s.nvtx_txt.append((t, t + D, 'KernelExecutor::compileFusion'))
        for name, a0, a1 in JIT_RANGES:
            s.nvtx_txt.append((t + int(a0 * D), t + int(a1 * D), name))
        lp = t + D - rng.randint(400000, 600000)
        s.c = lp + rng.randint(20000, 60000)
        launch(s, 'cuModuleLoadDataEx', 1, rng.randint(100000, 200000))
        s.nvtx_txt.append((lp, s.c + rng.randint(5000, 20000), 'executor_utils::Nvrtc::LoadPTX'))
        s.c = max(s.c, t + D) + rng.randint(30000, 80000)
        # runFusion: the fused kernel, launched through the driver API
        r0 = s.c
        s.c += rng.randint(100000, 300000)
        corr = launch(s, 'cuLaunchKernel', 1, rng.randint(2_000_000, 4_000_000))
        start = max(s.g, s.c + rng.randint(1000, 3000))
        dur = int(KERNELS['nvfuser'][4] * 1000 * math.exp(rng.gauss(0, sigma)))
        s.kern.append((start, start + dur, s.streams['compute'], corr, 'nvfuser', 'k'))
        s.g = start + dur
        s.c += rng.randint(50000, 150000)
        s.nvtx_txt.append((r0, s.c, 'KernelExecutor::runFusion'))
        # cuBLAS / cuDNN libraries loaded lazily before their first kernels: 10-30 ms of cuLibraryLoadData
        n = rng.randint(8, 16)
        total = rng.uniform(10e6, 30e6)
        w = [rng.uniform(0.2, 1.0) for _ in range(n)]
        l0 = s.c
        for x in w:
            s.c += rng.randint(300000, 3000000)
            launch(s, 'cuLibraryLoadData', 1, int(total * x / sum(w)))
            s.c += rng.randint(2000, 10000)
            launch(s, 'cuLibraryGetKernel', 1, rng.randint(300, 9000))
        s.jit = {'compile_ns': D, 'library_load_ns': int(total), 'start': t, 'end': s.c, 'libraries': n,
                 'load_span_ns': s.c - l0}

    queue = deque(range(job.n))
    while queue:
        run(queue.popleft(), queue)
    blocked = sorted(r for r, s in enumerate(st) if s.blocked is not None)
    dead = sorted(r for r, s in enumerate(st) if s.dead)
    if (pending or blocked) and not dead:
        raise SystemExit('internal error: deadlock without a planted hang (%d ops pending, ranks %s blocked)' % (
            len(pending), blocked[:8]))
    # ranks blocked on the GPU: their CPU goes on launching until something blocks the host (the step's
    # stream synchronize, .item(), a pageable copy); launches without kernel records
    for r in blocked:
        s = st[r]; ops = progs[r]; rng = s.rng
        s.pc += 1
        while s.pc < len(ops):
            op = ops[s.pc]; code = op[0]
            if code in (SYNC, STORM, PCOPY, JIT):
                break
            if code == K:
                launch(s, *kernel_api(op[1])); s.c += rng.randint(8000, 30000)
            elif code in (COLL, ACOLL, APP):
                stream = stream_of(s, r, op[1][0])
                if code in (ACOLL, APP):
                    launch(s, ev_api, 0, rng.randint(2000, 4000)); wait_event(s, stream)
                    s.nbuck += code == ACOLL
                t0 = s.c; s.c += rng.randint(4000, 12000)
                launch(s, *nccl_api())
                s.c += rng.randint(1500, 4000)
                s.nvtx.append((t0, s.c, op[5], 1))
                if code in (ACOLL, APP):
                    launch(s, ev_api, 0, rng.randint(2000, 4000))
                s.orphans.append((t0, op[1], op[2]))
                s.c += rng.randint(5000, 20000)
            elif code == WAIT:
                for _ in range(s.nbuck):
                    wait_event(s, s.streams['compute'])
                s.nbuck = 0
            elif code == PWAIT:
                wait_event(s, s.streams['compute'])
            elif code == MCPY:
                launch(s, 'cudaMemcpyAsync_v3020', 0)
            elif code == GC:
                s.c += int(op[1] * 1e6)
            s.pc += 1
        s.stopped_at = s.c
    # the first overlapped bucket each rank launched that never ran (the crash/hang picture of --dp-overlap)
    stuck_async = {}
    for r, s in enumerate(st):
        for comm, q in s.backlog.items():
            for key, rec in q:
                stuck_async.setdefault(r, []).append((key, rec, False))
    for key, arr in pending.items():
        for r, rec in arr.items():
            if rec['async']:
                stuck_async.setdefault(r, []).append((key, rec, True))
    return st, pending, hold, blocked, dead, progs, stuck_async
