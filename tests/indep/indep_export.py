"""Writing Nsight Systems SQLite exports from the replay (tests/indep/indep_sim.py)."""
import datetime, os, sqlite3

from indep_model import DDL, VM, KERNELS


META_KEYS = ['EXPORT_PRODUCT_NAME', 'EXPORT_PRODUCT_VERSION', 'EXPORT_SCHEMA_VERSION']
ENUMS = {
 'ENUM_CUPTI_SYNC_TYPE': [(0, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN', 'Unknown'), (1, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE', 'Event sync'), (2, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT', 'Stream wait sync'), (3, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE', 'Stream sync'), (4, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE', 'Context sync')],
 'ENUM_CUDA_MEMCPY_OPER': [(0, 'CUDA_MEMCPY_KIND_UNKNOWN', 'Unknown'), (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'), (2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host'), (8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device'), (10, 'CUDA_MEMCPY_KIND_PTOP', 'Peer-to-Peer')],
 'ENUM_CUDA_MEM_KIND': [(0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'), (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'), (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'), (3, 'CUDA_MEMOPR_MEMORY_KIND_ARRAY', 'Array'), (4, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed'), (5, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC', 'Device Static'), (6, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC', 'Managed Static'), (7, 'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN', 'Unknown')],
 'ENUM_NSYS_EVENT_CLASS': [(0, 'TRACE_PROCESS_EVENT_CUDA_RUNTIME', 'CUDA runtime'), (1, 'TRACE_PROCESS_EVENT_CUDA_DRIVER', 'CUDA driver')],
 'ENUM_NSYS_EVENT_TYPE': [(59, 'NvtxPushPopRange', 'NvtxPushPopRange'), (60, 'NvtxStartEndRange', 'NvtxStartEndRange'), (75, 'NvtxDomainCreate', 'NvtxDomainCreate')],
}


class Export:
    """One SQLite file made from a DDL dump; inserts by column name, defaults for NOT NULL columns."""

    def __init__(self, path, ddl_path):
        if os.path.exists(path): os.remove(path)
        self.db = sqlite3.connect(path)
        self.db.execute('PRAGMA journal_mode=OFF'); self.db.execute('PRAGMA synchronous=OFF')
        with open(ddl_path) as f:
            self.db.executescript(f.read())
        self.cols = {}
        for (t,) in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            self.cols[t] = [(c[1], c[2].upper(), c[3]) for c in self.db.execute('PRAGMA table_info(%s)' % t)]
        self.strings = {}

    def sid(self, s):
        i = self.strings.get(s)
        if i is None:
            i = self.strings[s] = len(self.strings) + 1
        return i

    def insert(self, table, keys, rows, rng):
        if table not in self.cols or not rows:
            return
        present = {c[0] for c in self.cols[table]}
        idx = [i for i, k in enumerate(keys) if k in present]
        extra = [(c[0], '[]' if c[0] == 'tensorSizeMinusOneElements' else ('' if 'TEXT' in c[1] else 0))
                 for c in self.cols[table] if c[2] and c[0] not in keys]
        names = [keys[i] for i in idx] + [e[0] for e in extra]
        tail = tuple(e[1] for e in extra)
        rows = [tuple(row[i] for i in idx) + tail for row in rows]
        rng.shuffle(rows)                                  # nsys promises no row order
        self.db.executemany('INSERT INTO %s (%s) VALUES (%s)' % (table, ','.join('"%s"' % n for n in names),
                                                                ','.join('?' * len(names))), rows)

    def finish(self, lazy):
        if lazy:                                           # lazy export: only tables that have rows
            for t in list(self.cols):
                if not t.startswith('ENUM_') and self.db.execute('SELECT count(*) FROM %s' % t).fetchone()[0] == 0:
                    self.db.execute('DROP TABLE %s' % t)
        self.db.commit(); self.db.close()


KCOLS = ['start', 'end', 'deviceId', 'contextId', 'streamId', 'correlationId', 'globalPid', 'demangledName',
         'shortName', 'mangledName', 'launchType', 'cacheConfig', 'registersPerThread', 'gridX', 'gridY', 'gridZ',
         'blockX', 'blockY', 'blockZ', 'staticSharedMemory', 'dynamicSharedMemory', 'localMemoryPerThread',
         'localMemoryTotal', 'gridId', 'sharedMemoryExecuted', 'sharedMemoryLimitConfig', 'greenContextId']


def nccl_names(job, kname):
    if job.new:
        return kname + '(ncclDevKernelArgsStorage<(unsigned long)4096>)', '_Z%d%s24ncclDevKernelArgsStorageILm4096EE' % (len(kname), kname)
    return kname + '(ncclDevComm *, unsigned long, ncclWork *)', '_Z%d%sP11ncclDevCommmP8ncclWork' % (len(kname), kname)


def write_process(job, ex, r, s, proc, t0, wrng, nccl_domain_row):
    """Rows of one rank process; t0 = capture start on the true timeline (subtracted from every time)."""
    pid, dev, ctx = proc['pid'], proc['device'], proc['context']
    gpid = VM | (pid << 24); gtid = gpid | pid
    krows = []
    grid = 0
    for (a, b, stream, corr, what, typ) in s.kern:
        grid += 1
        if typ == 'nccl':
            dem, mang = nccl_names(job, what)
            krows.append((a - t0, b - t0, dev, ctx, stream, corr, gpid, ex.sid(dem), ex.sid(what), ex.sid(mang),
                          1, 1, 96, 16 if job.new else 24, 1, 1, 640 if job.new else 512, 1, 1, 21568, 82240, 0,
                          787218432, grid, 135168, 1, 0))
        else:
            kd = KERNELS[what]
            short = kd[0] if job.new else kd[2]
            dem = (kd[1] if job.new else kd[3]) or short
            krows.append((a - t0, b - t0, dev, ctx, stream, corr, gpid, ex.sid(dem), ex.sid(short), None,
                          1, 1, 128, kd[5], 1, 1, 256, 1, 1, 0, 49152 if 'gemm' in short or 'nvjet' in short else 0,
                          0, 0, grid, 65536, 0, 0))
    ex.insert('CUPTI_ACTIVITY_KIND_KERNEL', KCOLS, krows, wrng)
    ex.insert('CUPTI_ACTIVITY_KIND_RUNTIME', ['start', 'end', 'eventClass', 'globalTid', 'correlationId', 'nameId', 'returnValue'],
              [(a - t0, b - t0, cls, gtid, corr, ex.sid(api), 0) for (a, b, corr, api, cls) in s.rt], wrng)
    ex.insert('CUPTI_ACTIVITY_KIND_MEMCPY', ['start', 'end', 'deviceId', 'contextId', 'streamId', 'correlationId', 'globalPid',
                                             'bytes', 'copyKind', 'srcKind', 'dstKind', 'greenContextId', 'copyCount'],
              [(m[0] - t0, m[1] - t0, dev, ctx, m[2], m[3], gpid, m[4], m[5]) + (m[6:8] if len(m) > 6 else
               (1 if m[5] == 1 else 2, 2 if m[5] == 1 else 1)) + (0, 1) for m in s.mcpy], wrng)
    ex.insert('CUPTI_ACTIVITY_KIND_SYNCHRONIZATION', ['start', 'end', 'deviceId', 'contextId', 'streamId', 'correlationId',
                                                      'globalPid', 'syncType', 'eventId', 'eventSyncId'],
              [(a - t0, b - t0, dev, ctx, st_, corr, gpid, 3, 4294967295, 0) for (a, b, st_, corr) in s.sync] +
              [(a - t0, b - t0, dev, ctx, st_, corr, gpid, ty, 4294967295 if ty == 3 else 7000 + corr % 4096, 0)
               for (a, b, st_, corr, ty) in s.sync_x], wrng)
    nv = []
    if job.a.nccl_nvtx:
        if nccl_domain_row and s.nvtx:                  # only processes that created NCCL communicators
            first = min((a for a, *_ in s.nvtx), default=t0 + 1000)
            nv.append((first - 2000000 - t0, None, 75, None, 'NCCL', gtid, None, 1))
        nv += [(a - t0, b - t0, 59, None, None, gtid, ex.sid(name), dom) for (a, b, name, dom) in s.nvtx]
    nv += [(a - t0, b - t0, 59, None, text, gtid, None, 0) for (a, b, text) in s.nvtx_txt]   # inline text, domain 0
    if job.a.markers:
        nv += [(a - t0, b - t0, 59, None, 'ProfilerStep#%d' % i, gtid, None, 0)
               for i, (a, b) in s.iter_t.items() if b is not None]
    keys = ['start', 'end', 'eventType', 'rangeId', 'text', 'globalTid', 'textId', 'domainId']
    pay = getattr(job, 'nvtx_blobs', None)          # indep_scaling.py --payloads: rank -> blobs aligned with s.nvtx
    if pay is not None:
        blobs = pay.get(r) or []
        by_span = {}
        if job.a.nccl_nvtx:
            for (a, b, name, dom), blob in zip(s.nvtx, blobs):
                if blob is not None:
                    by_span[(a - t0, b - t0)] = blob
        nv = [row + (by_span.get((row[0], row[1])) if row[2] == 59 and row[7] == 1 else None,) for row in nv]
        keys = keys + ['binaryData']
    ex.insert('NVTX_EVENTS', keys, nv, wrng)
    ex.insert('PROCESSES', ['globalPid', 'pid', 'name'], [(gpid, pid, 'python3')], wrng)
    tn = [(ex.sid('python3'), 20, gtid), (ex.sid('pt_nccl_watchdg'), 20, gtid + 37), (ex.sid('pt_nccl_heartbt'), 20, gtid + 38),
          (ex.sid('cuda-EvtHandlr'), 20, gtid + 9), (ex.sid('[NSys]'), 20, gtid + 2)]
    ex.insert('ThreadNames', ['nameId', 'priority', 'globalTid'], tn, wrng)
    strm = [(sid, 0, 1, pid, ctx, 0 if k == 'compute' else 4294967295, 2) for k, sid in s.streams.items()]
    ex.insert('TARGET_INFO_CUDA_STREAM', ['streamId', 'hwId', 'vmId', 'processId', 'contextId', 'priority', 'flag'], strm, wrng)
    ex.insert('TARGET_INFO_CUDA_NULL_STREAM', ['streamId', 'hwId', 'vmId', 'processId', 'deviceId', 'contextId'],
              [(s.streams['compute'], 0, 1, pid, dev, ctx)], wrng)


def write_file(job, path, host, procs, st, t0, t_end, wrng, clock_err_ns, epoch, nccl_domain_row):
    fname, prod, lazy = DDL[job.a.schema]
    ex = Export(path, os.path.join(job.a.ddl_dir, fname))
    for r, proc in procs:
        write_process(job, ex, r, st[r], proc, t0, wrng, nccl_domain_row)
    schemas = getattr(job, 'nvtx_schemas', None)     # indep_scaling.py: NCCL payload schemas, once per process
    if schemas and job.a.nccl_nvtx:
        srows, erows = [], []
        for _ in procs:
            for (sid, size, entries) in schemas:
                srows.append((1, sid, None, 1, None, len(entries), size, None))
                erows += [(1, sid, i, None, ty, name, None, None, off) for i, (ty, name, off) in enumerate(entries)]
        ex.insert('NVTX_PAYLOAD_SCHEMAS', ['domainId', 'schemaId', 'name', 'type', 'flags', 'numEntries', 'payloadSize',
                                           'alignTo'], srows, wrng)
        ex.insert('NVTX_PAYLOAD_SCHEMA_ENTRIES', ['domainId', 'schemaId', 'idx', 'flags', 'type', 'name', 'description',
                                                  'arrayOrUnionDetail', 'offset'], erows, wrng)
    launcher = wrng.randint(40, 90)
    ex.insert('PROCESSES', ['globalPid', 'pid', 'name'], [(VM | (launcher << 24), launcher, 'torchrun' if len(procs) > 1 else 'bash'),
                                                          (VM | ((launcher - 9) << 24), launcher - 9, 'nsys')], wrng)
    utc = epoch + t0 + clock_err_ns
    ts = datetime.datetime.fromtimestamp(utc // 10**9, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S')
    syskey = wrng.randint(10**11, 5 * 10**14)
    ex.insert('TARGET_INFO_SESSION_START_TIME', ['utcEpochNs', 'utcTime', 'localTime', 'systemClockNs'], [(utc, ts, ts, syskey)], wrng)
    dur = t_end - t0
    start = syskey if job.new else wrng.randint(150, 200) * 10**6
    ex.insert('ANALYSIS_DETAILS', ['globalVid', 'duration', 'startTime', 'stopTime'], [(VM, dur, start, start + dur)], wrng)
    env = [('Hostname', 619, host), ('CpuCores', 1, '224'), ('NvDriverVersion', 205, '570.124.06' if job.new else '515.65.01'),
           ('CudaDriverVersion', 611, '12080' if job.new else '11070'), ('OsDescription', 3, 'Ubuntu 22.04.4 LTS'),
           ('HasNvtxEvents', 5, '1'), ('HasCudaEvents', 6, '1'), ('SupportsNCCL', 700, '1')]
    ex.insert('TARGET_INFO_SYSTEM_ENV', ['globalVid', 'devStateName', 'name', 'nameEnum', 'value'],
              [(VM, 'Local (CLI)', n, e, v) for n, e, v in env], wrng)
    ver = '3.25.0' if job.new else '3.0.0'
    meta = [('EXPORT_PRODUCT_NAME', 'NVIDIA Nsight Systems'), ('EXPORT_PRODUCT_VERSION', prod),
            ('EXPORT_SCHEMA_VERSION', ver)] + [('EXPORT_SCHEMA_VERSION_' + k, v) for k, v in zip(('MAJOR', 'MINOR', 'MICRO'), ver.split('.'))] + \
           [('EXPORT_PARAM_EXPORT_TYPE', 'SQLite'), ('EXPORT_PARAM_LAZY', 'true' if lazy else 'false'),
            ('EXPORT_PARAM_TIME_NORMALIZE', 'false'), ('EXPORT_PARAM_TIME_SHIFT', '0'), ('EXPORT_CONFIG_TIME_SHIFT', '0'),
            ('EXPORT_PARAM_INPUT_FILE', os.path.basename(path).replace('.sqlite', '.nsys-rep'))]
    if hasattr(job, 'nvtx_blobs') and job.new:      # indep_scaling.py: say whether blobs (payload values) were exported
        meta += [('EXPORT_PARAM_INCLUDE_JSON', 'false'),
                 ('EXPORT_PARAM_INCLUDE_BLOBS', 'false' if job.nvtx_blobs is None else 'true')]
    ex.insert('META_DATA_EXPORT' if job.new else 'EXPORT_META_DATA', ['name', 'value'], meta, wrng)
    if 'TARGET_INFO_GPU' in ex.cols:
        ex.insert('TARGET_INFO_GPU', ['vmId', 'id', 'name', 'busLocation', 'totalMemory', 'smCount', 'cuDevice', 'uuid'],
                  [(VM, i, 'NVIDIA A100-SXM4-80GB', '0000:%02x:00.0' % (0x07 + 0x10 * i), 85899345920, 108, i,
                    'GPU-%08x-0000-0000-0000-%012x' % (wrng.getrandbits(32), wrng.getrandbits(48))) for i in range(job.G)], wrng)
    for t, rows in ENUMS.items():
        ex.insert(t, ['id', 'name', 'label'], rows, wrng)
    ex.insert('ENUM_CUDA_KERNEL_LAUNCH_TYPE' if job.new else 'ENUM_CUDA_KRENEL_LAUNCH_TYPE', ['id', 'name', 'label'],
              [(0, 'CUDA_KERNEL_LAUNCH_TYPE_UNKNOWN', 'Unknown'), (1, 'CUDA_KERNEL_LAUNCH_TYPE_REGULAR', 'Regular')], wrng)
    sids = list(ex.strings.items())
    ex.insert('StringIds', ['id', 'value'], [(i, v) for v, i in sids], wrng)
    ex.finish(lazy)

