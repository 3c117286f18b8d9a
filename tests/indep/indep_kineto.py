"""Writing PyTorch profiler (Kineto) Chrome-trace JSON from the replay (tests/indep/indep_sim.py --format kineto).

Structure copied from the real samples (shared/data/real/param/dlrm_kineto, 2023: integer epoch us;
shared/data/real/hta/nccl_parser_config, 2024: "<us>.<3 digits>" relative to baseTimeNanoseconds, NCCL
metadata in the kernels' args). One file per rank process; see README.md "Kineto output".
"""
import gzip, json, os, re

from indep_model import KERNELS, COLL, ACOLL

try:
    from indep_model import APP
except ImportError:                                    # APP (async p2p) lives in the pipeline module on some versions
    APP = None

ANNOT = {'ncclAllReduce': 'nccl:all_reduce', 'ncclReduceScatter': 'nccl:_reduce_scatter_base',
         'ncclAllGather': 'nccl:_all_gather_base', 'ncclSend': 'nccl:send', 'ncclRecv': 'nccl:recv'}
COLLNAME = {'AllReduce': 'allreduce', 'ReduceScatter': 'reduce_scatter', 'AllGather': 'all_gather',
            'ncclSend': 'send', 'ncclRecv': 'recv'}
DTYPE = {'bf16': ('BFloat16', 2), 'f32': ('Float', 4), '': ('BFloat16', 2)}
NAME_STYLES = ('host_pid', 'trace_rank', 'rank_ms')


def nccl_kname(kname):
    return kname + '(ncclDevComm*, unsigned long, ncclWork*)'


class Clock:
    """true ns -> text. style 2023: integer epoch us; 2024: '<us>.<3 digits>' relative to base_ns."""

    def __init__(self, style, off_ns, base_ns):
        self.style, self.off, self.base = style, off_ns, base_ns

    def ts(self, t):
        ns = t + self.off
        if self.style == '2023':
            return str(ns // 1000)
        q, r = divmod(ns - self.base, 1000)
        return '%d.%03d' % (q, r)

    def dur(self, a, b):
        if self.style == '2023':
            return str((b + self.off) // 1000 - (a + self.off) // 1000)
        q, r = divmod(b - a, 1000)
        return '%d.%03d' % (q, r)


def ev(ph, cat, name, pid, tid, clk, a, b=None, args=None, extra=''):
    s = '{"ph": "%s", ' % ph
    if cat:
        s += '"cat": "%s", ' % cat
    s += '"name": %s, "pid": %s, "tid": %s, "ts": %s' % (json.dumps(name), json.dumps(pid), json.dumps(tid), clk.ts(a))
    if b is not None:
        s += ', "dur": %s' % clk.dur(a, b)
    s += extra
    if args is not None:
        s += ', "args": %s' % json.dumps(args)
    return s + '}'


def coll_meta(job, r, s, prog):
    """corr of each NCCL launch -> (op, pg index): the i-th NCCL NVTX range of the replay is the i-th collective op
    of the program; its launch is the runtime row inside that range."""
    colls = [op for op in prog if op[0] in (COLL, ACOLL) or (APP is not None and op[0] == APP)]
    rts = sorted(s.rt)
    out, ranges = {}, []
    for i, (a, b, api, dom) in enumerate(s.nvtx):
        op = colls[i] if i < len(colls) and colls[i][5] == api else None
        corr = None
        for (ra, rb, c, rapi, cls) in rts:
            if ra >= a and rb <= b and ('Launch' in rapi):
                corr = c
        ranges.append((a, b, api, corr))
        if corr is not None and op is not None:
            out[corr] = op
    return out, ranges


def write_kineto(job, out_dir, st, progs, hosts, err, epoch, cap_start, cap_end, rng):
    """Writes one trace per rank; returns truth's files dict and the conventions chosen."""
    style = '2023' if job.a.schema == '3.0' else '2024'
    names = rng.choice(NAME_STYLES)
    gz = rng.random() < 0.5
    comm_keys = sorted(job.comms, key=repr)
    pg_name = {k: str(i + 1) for i, k in enumerate(comm_keys)}     # "0" is the default (world) group
    pids = [rng.randint(1000, 4000000) for _ in range(job.n)]
    tids = [p + rng.randint(0, 40) for p in pids]
    files = {}
    for r, s in enumerate(st):
        h = job.host(r)
        local = r % job.G
        off = epoch + err[h]
        base = ((epoch + err[h] + cap_start[r]) // 10**9) * 10**9 - rng.randint(1, 50) * 86400 * 10**9
        clk = Clock(style, off, base)
        pid, tid = pids[r], tids[r]
        end_ms = (cap_end[r] + off) // 10**6
        if names == 'host_pid':
            fname = '%s_%d.%d.pt.trace.json' % (hosts[h].split('.')[0], pid, end_ms)
        elif names == 'trace_rank':
            fname = 'trace_rank%d.json' % r
        else:
            fname = 'rank%d.%d.pt.trace.json' % (r, end_ms)
        if gz:
            fname += '.gz'
        meta, ranges = coll_meta(job, r, s, progs[r])
        evs = []
        t0 = cap_start[r]
        for dev_pid, label in ((pid, 'CPU'), (local, 'GPU %d' % local)):
            evs.append(ev('M', None, 'process_name', dev_pid, 0, clk, t0, args={'name': 'python3'}))
            evs.append(ev('M', None, 'process_labels', dev_pid, 0, clk, t0, args={'labels': label}))
        evs.append(ev('M', None, 'thread_name', pid, tid, clk, t0, args={'name': 'thread %d (python3)' % tid}))
        for sid in sorted(set(s.streams.values())):
            evs.append(ev('M', None, 'thread_name', local, sid, clk, t0, args={'name': 'stream %d ' % sid}))
        if job.a.markers:
            for i, (a, b) in sorted(s.iter_t.items()):
                if b is not None:
                    evs.append(ev('X', 'user_annotation', 'ProfilerStep#%d' % i, pid, tid, clk, a, b,
                                  args={'External id': 1 + i}))
        ext = 100000
        for (a, b, api, corr) in ranges:
            ext += 1
            evs.append(ev('X', 'user_annotation', ANNOT.get(api, 'nccl:' + api), pid, tid, clk, a, b,
                          args={'External id': ext}))
        for (a, b, text) in getattr(s, 'nvtx_txt', []):
            evs.append(ev('X', 'user_annotation', text, pid, tid, clk, a, b))
        launched = set()
        for (a, b, corr, api, cls) in s.rt:
            name = re.sub(r'_v\d+$', '', api)
            cat = 'cuda_driver' if cls == 1 else 'cuda_runtime'
            evs.append(ev('X', cat, name, pid, tid, clk, a, b, args={'External id': corr, 'correlation': corr}))
            launched.add(corr)
        free_corr = 10**7
        for (a, b, stream, corr, what, typ) in s.kern:
            if corr is None:
                free_corr += 1
                corr = free_corr
            args = {'External id': corr, 'queued': 0, 'device': local, 'context': 1, 'stream': stream,
                    'correlation': corr}
            if typ == 'nccl':
                name = nccl_kname(what)
                args.update({'registers per thread': 96, 'shared memory': 41760, 'grid': [16, 1, 1],
                             'block': [640, 1, 1]})
                op = meta.get(corr)
                if style == '2024' and op is not None:
                    kind, members = job.comms[op[1][0]]
                    dname, size = DTYPE.get(op[3], ('BFloat16', 2))
                    n = max(1, int(op[4]) // size)
                    cn = COLLNAME.get(op[2], COLLNAME.get(op[5], op[2].lower()))
                    g = len(members)
                    inn, outn = n, n
                    if cn == 'reduce_scatter':
                        outn = n // g
                    elif cn == 'all_gather':
                        inn = n // g
                    args.update({'Collective name': cn, 'In msg nelems': inn, 'Out msg nelems': outn, 'Group size': g,
                                 'dtype': dname, 'In split size': '[]', 'Out split size': '[]',
                                 'Process Group Name': pg_name[op[1][0]], 'Process Group Description': kind,
                                 'Process Group Ranks': '[%s]' % ', '.join(map(str, members))})
            else:
                kd = KERNELS.get(what)
                name = ((kd[1] or kd[0]) if job.new else (kd[3] or kd[2])) if kd else what
                args.update({'registers per thread': 128, 'shared memory': 0, 'grid': [kd[5] if kd else 1, 1, 1],
                             'block': [256, 1, 1]})
            evs.append(ev('X', 'kernel', name, local, stream, clk, a, b, args=args))
            if corr in launched:
                ra = next(x[0] for x in s.rt if x[2] == corr)
                evs.append(ev('s', 'ac2g', 'ac2g', pid, tid, clk, ra, extra=', "id": %d' % corr))
                evs.append(ev('f', 'ac2g', 'ac2g', local, stream, clk, a, extra=', "id": %d, "bp": "e"' % corr))
        for m in s.mcpy:
            a, b, stream, corr, nb, kind = m[:6]
            src = m[6] if len(m) > 6 else (1 if kind == 1 else 2)
            if kind == 1:
                name = 'Memcpy HtoD (%s -> Device)' % ('Pageable' if src == 0 else 'Pinned')
            else:
                name = 'Memcpy DtoH (Device -> Pinned)'
            evs.append(ev('X', 'gpu_memcpy', name, local, stream, clk, a, b,
                          args={'External id': corr, 'device': local, 'context': 1, 'stream': stream,
                                'correlation': corr, 'bytes': nb}))
            if corr in launched:
                ra = next(x[0] for x in s.rt if x[2] == corr)
                evs.append(ev('s', 'ac2g', 'ac2g', pid, tid, clk, ra, extra=', "id": %d' % corr))
                evs.append(ev('f', 'ac2g', 'ac2g', local, stream, clk, a, extra=', "id": %d, "bp": "e"' % corr))
        t1 = cap_end[r]                                 # the profiler's window, as in the real samples
        evs.append(ev('X', 'Trace', 'PyTorch Profiler (0)', 'Spans', 'PyTorch Profiler', clk, t0, t1, args={'Op count': 0}))
        evs.append(ev('M', None, 'process_sort_index', 'Spans', 0, clk, t0, args={'sort_index': 536870912}))
        evs.append(ev('i', None, 'Iteration Start: PyTorch Profiler', 'Traces', 'Trace PyTorch Profiler', clk, t0,
                      extra=', "s": "g"'))
        evs.append(ev('i', None, 'Record Window End', '', '', clk, t1, extra=', "s": "g"'))
        if rng.random() < 0.5:
            rng.shuffle(evs)                                # Kineto promises no event order
        devs = [{'id': i, 'name': 'NVIDIA A100-SXM4-80GB', 'totalGlobalMem': 85899345920, 'computeMajor': 8,
                 'computeMinor': 0, 'maxThreadsPerBlock': 1024, 'maxThreadsPerMultiprocessor': 2048,
                 'regsPerBlock': 65536, 'warpSize': 32, 'sharedMemPerBlock': 49152, 'numSms': 108}
                for i in range(job.G)]
        dist = {'backend': 'nccl', 'rank': r, 'world_size': job.n}
        if style == '2024':
            mine = [k for k in comm_keys if r in job.comms[k][1]]
            dist.update({'pg_count': len(mine) + 1, 'pg_config': [
                {'pg_name': '0', 'pg_desc': 'default_pg', 'backend_config': 'cuda:nccl', 'pg_size': job.n,
                 'ranks': list(range(job.n))}] + [
                {'pg_name': pg_name[k], 'pg_desc': job.comms[k][0], 'backend_config': 'cuda:nccl',
                 'pg_size': len(job.comms[k][1]), 'ranks': list(job.comms[k][1])} for k in mine],
                'nccl_version': '2.21.5'})
        txt = '{\n  "schemaVersion": 1,\n  "deviceProperties": %s,\n  "distributedInfo": %s,\n' % (
            json.dumps(devs), json.dumps(dist))
        txt += '  "traceEvents": [\n  ' + ',\n  '.join(evs) + '\n  ],\n  "traceName": %s' % json.dumps(fname)
        if style == '2024':
            txt += ',\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": %d' % base
        txt += '\n}\n'
        path = os.path.join(out_dir, fname)
        if gz:
            with gzip.open(path, 'wt') as f:
                f.write(txt)
        else:
            with open(path, 'w') as f:
                f.write(txt)
        files[fname] = {'ranks': [r], 'host': hosts[h]}
    conv = {'format': 'kineto', 'kineto_style': style, 'kineto_names': names, 'kineto_gzip': gz,
            'hosts_in_file_names': names == 'host_pid'}
    return files, conv
