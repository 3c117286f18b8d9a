#!/usr/bin/python3
"""Scaling families for straggler-scan's `scaling` command: pure data-parallel runs (layout 1x1xN, rank r on
host r // 8) at 64, 128, 256 and 512 ranks whose gradient AllReduce follows NCCL's ring cost over a fabric of
link classes (indep_fabric.py). Written without reading straggler-scan's analyser or its generator.

  indep_scaling.py FAMILY_DIR --scenario pod|flat|small|slowlink|seed --seed S [--payloads]

writes FAMILY_DIR/n64 .. n512 (run directories as indep_sim.py writes them, each with truth.json),
FAMILY_DIR/topology.txt (HOSTNAME RACK POD) and FAMILY_DIR/scaling_truth.json. See README.md, "Scaling families".
"""
import argparse, json, math, os, random, statistics, struct, sys, time
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from indep_model import DEFAULT_DDL_DIR, Job, K, COLL, CPU, MCPY, SYNC, MSTART, MEND, ITER
from indep_replay import simulate
from indep_export import write_file
from indep_truth import build_truth
from indep_fabric import Fabric, fit_seed_fabric

HOST_STYLES = ['gpu-st-p5-48xlarge-%d', 'dgx-h100-%03d', 'hgx%04d', 'node%02d.cluster.local']
SCALES = (64, 128, 256, 512)
GPN = 8                                   # GPUs per host
NODES_PER_RACK = 4
MIB, KIB = 1 << 20, 1 << 10
SEED_TARGETS_MS = {64: 45.0, 128: 52.0, 256: 61.0, 512: 340.0}   # domain/debugging-scenarios.txt, scenario 6
# light step: a few compute kernels, then the DP gradient all-reduce(s), then the optimizer
FWD_LIGHT = ['embed_f', 'ln_f', 'qkv', 'attn_f', 'proj', 'fc1', 'gelu', 'fc2', 'logits', 'xent_f']
BWD_LIGHT = ['xent_b', 'dgemm', 'wgemm', 'attn_b', 'dgemm', 'wgemm', 'embed_b']
OPT_LIGHT = ['l2norm', 'adam']
# NCCL payload schemas (export notes 4.3; schemaId = (1 << 24) + offset; entry types: 18 UINT64, 22 SIZE, 5 INT,
# 16777232 = the reduction-op enum of NCCL 2.27, START + 16). (schemaId, payloadSize, [(type, name, offset)])
SID_ALLREDUCE, SID_INIT_CONFIG = (1 << 24) + 5, (1 << 24) + 11
NCCL_SCHEMAS = [(SID_ALLREDUCE, 24, [(18, 'NCCL communicator ID', None), (22, 'Message size [bytes]', 8),
                                     (16777232, 'Reduction operation', 16)]),
                (SID_INIT_CONFIG, 24, [(18, 'NCCL communicator ID', None), (5, 'No. of ranks', 8), (5, 'Rank', 12),
                                       (5, 'CUDA device', 16)])]
CAUSE = {'pod': 'pod_boundary', 'seed': 'pod_boundary', 'slowlink': 'slow_link'}


def blob(schema_id, payload):
    """NVTX_EVENTS.binaryData: <IIIIQQ header (domainId, 0, schemaId, 0, payloadSize, totalSize), then the payload
    at the schema entries' offsets (export notes 4.4, the nsys-ai decoder's reading)"""
    return struct.pack('<IIIIQQ', 1, 0, schema_id, 0, len(payload), 32 + len(payload)) + payload


def draw_family(scenario, seed):
    """fabric parameters, message size, buckets per step, pod size and the planted slow link"""
    rng = random.Random(seed * 7877 + {'pod': 1, 'flat': 2, 'small': 3, 'slowlink': 4, 'seed': 5}[scenario])
    fab = {'intra_busbw': round(rng.uniform(250, 400), 2),      # NVLink class, SIMPLE busBw GB/s
           'inter_busbw': round(rng.uniform(35, 50), 2),        # network inside a pod
           'xpod_factor': round(rng.uniform(3, 6), 3),          # links between pods this much slower
           'lat_scale': round(rng.uniform(0.8, 1.3), 3),        # x NCCL's hwLat table (NVLink and NET)
           'net_latency_us': round(rng.uniform(0.5, 3.0), 3),   # graph latencyInter (x2 for SIMPLE)
           'xpod_extra_us': round(rng.uniform(2.0, 6.0), 3),    # more switch tiers between pods, per crossing step
           'cpu': rng.choice(('intel', 'amd')), 'nchannels': rng.choice((8, 16, 32))}
    fab['xpod_busbw'] = round(fab['inter_busbw'] / fab['xpod_factor'], 4)
    noise = round(rng.uniform(0.01, 0.02), 4)                   # per-op transfer noise (sigma)
    fam = {'scenario': scenario, 'seed': seed, 'fabric': fab, 'noise_sigma': noise, 'pod_nodes': 32, 'slow': None}
    if scenario == 'small':
        fam.update(nbytes=rng.choice((32, 64, 128, 256)) * KIB, buckets=8)
    else:
        fam.update(nbytes=rng.choice((256, 384, 512)) * MIB, buckets=1)
    if scenario in ('flat', 'small', 'slowlink'):
        fam['pod_nodes'] = 64                                   # one pod holds every host
    if scenario == 'slowlink':
        h = rng.randint(32, 62)                                 # an edge of the ring among the hosts new at 512
        fam['slow'] = {'hosts': [h, h + 1], 'factor': round(rng.uniform(4, 8), 3), 'iter': 0}
    if scenario == 'seed':                                      # fit the fabric to 45/52/61/340 ms
        fam['nbytes'] = 256 * MIB
        base = dict(fab, lat_scale=1.0, cpu='intel', nchannels=16)
        fam['fabric'] = fit_seed_fabric(base, fam['nbytes'], SEED_TARGETS_MS, GPN, 32 * GPN)
        fam['fabric']['xpod_factor'] = round(fam['fabric']['inter_busbw'] / fam['fabric']['xpod_busbw'], 3)
    return fam


def light_program(job, r):
    """ops of one rank: compute, then the DP gradient all-reduce in equal buckets, then the optimizer"""
    key = ('dp', 0, 0)
    job.comms.setdefault(key, ('dp', tuple(range(job.n))))
    ops, seq = [], 0
    for it in range(job.a.iters):
        ops += [(ITER, it), (CPU, 'iter')]
        if job.a.markers: ops.append((MSTART, it))
        ops.append((MCPY, 1, 4 * 4096 * 8 * 2))
        ops += [(K, role) for role in FWD_LIGHT + BWD_LIGHT]
        for _ in range(job.buckets):
            seq += 1
            ops.append((COLL, (key, seq), 'AllReduce', 'f32', job.bucket_bytes, 'ncclAllReduce'))
        ops += [(K, role) for role in OPT_LIGHT]
        ops.append((MCPY, 2, 4))
        ops.append((SYNC,))
        if job.a.markers: ops.append((MEND, it))
    return ops


def transfer_model(job, cname, members, nbytes, it):
    assert cname == 'AllReduce', cname
    hosts = sorted({job.host(m) for m in members})
    return job.fabric.allreduce(len(members), hosts, nbytes, it)['us'] * 1000.0


def planted_transfers(job, st):
    """per DP op (in issue order): median over members of (end - last member's arrival), ns; its iteration"""
    per_rank = [sorted((k[0], k[1]) for k in s.kern if k[5] == 'nccl') for s in st]
    nops = len(per_rank[0])
    assert all(len(p) == nops for p in per_rank), 'ranks disagree on the number of NCCL ops'
    out = []
    for k in range(nops):
        amax = max(p[k][0] for p in per_rank)
        out.append((statistics.median(p[k][1] - amax for p in per_rank), k // job.buckets))
    return out


def run_args(fam, n, args, out):
    a = SimpleNamespace(
        layout='1x1x%d' % n, gpus_per_host=GPN, iters=args.iters, microbatches=0, layers=1, schedule='1f1b',
        virtual_stages=1, balanced_stages=False, act_mb=16.0, grad_mb=fam['nbytes'] * fam['buckets'] / MIB,
        intra_gbps=fam['fabric']['intra_busbw'], inter_gbps=fam['fabric']['inter_busbw'], dp_mode='ar',
        dp_overlap=False, dp_bucket_layers=1, cpu_lead_ms=0.0, jitter=2.0, one_shot=False, schema=args.schema,
        files=args.files, naming='plain', markers=args.markers, nccl_nvtx=True, clock_error_ms=2.0,
        fault=[], seed=args.seed * 1000 + n, ddl_dir=args.ddl_dir)
    if fam['slow'] and n // GPN > max(fam['slow']['hosts']):
        s = fam['slow']
        a.fault = ['slow_link:%d:%d:%s:%d' % (s['hosts'][0], s['hosts'][1], s['factor'], s['iter'])]
    return a


def make_run(fam, n, args, out, hosts, pod_of, rack_of):
    a = run_args(fam, n, args, out)
    job = Job(a)
    job.program_builder, job.transfer_model = light_program, transfer_model
    job.coll_noise = fam['noise_sigma']
    job.buckets, job.bucket_bytes = fam['buckets'], fam['nbytes']
    job.fabric = Fabric(fam['fabric'], pod_of, fam['slow'])
    payloads = args.payloads and a.schema == '3.25'
    job.nvtx_schemas = NCCL_SCHEMAS if a.schema == '3.25' else None
    job.nvtx_blobs = {} if payloads else None
    st, pending, hold, blocked, dead, progs, stuck_async = simulate(job)
    assert not pending and not blocked and not dead
    rng = random.Random(a.seed * 104729 + 17)
    comm_hash = rng.getrandbits(64)
    # eager communicator init (init_process_group(device_id=...)) before the first step: ncclCommInitRankConfig
    for r, s in enumerate(st):
        t1 = s.it_start[0] - rng.randint(50_000_000, 500_000_000)
        t0 = t1 - rng.randint(300_000_000, 300_000_000 + 2_000_000 * n)
        s.nvtx.insert(0, (t0, t1, 'ncclCommInitRankConfig', 1))
        if payloads:
            dev = r % GPN if a.files == 'host' else 0
            bl = []
            for (_a, _b, name, _d) in s.nvtx:
                if name == 'ncclCommInitRankConfig':
                    bl.append(blob(SID_INIT_CONFIG, struct.pack('<Qiii4x', comm_hash, n, r, dev)))
                elif name == 'ncclAllReduce':
                    bl.append(blob(SID_ALLREDUCE, struct.pack('<QQi4x', comm_hash, fam['nbytes'], 0)))   # 0: Sum
                else:
                    bl.append(None)
            job.nvtx_blobs[r] = bl
    err = [int(rng.choice((-1, 1)) * rng.uniform(0.02, a.clock_error_ms) * 1e6) for _ in range(job.H)]
    epoch = 1_780_000_000 * 10**9 + args.seed * 86_400 * 10**9 + n * 3_600 * 10**9
    cap_start = [-rng.randint(4 * 10**9, 25 * 10**9) for _ in range(job.n)]
    cap_end = [s.stopped_at + rng.randint(int(5e8), int(2e9)) for s in st]
    os.makedirs(out, exist_ok=True)
    files, wrng, domain_row = {}, random.Random(a.seed * 13 + 1), rng.random() < 0.5
    if a.files == 'rank':
        for r in range(job.n):
            h = job.host(r)
            name = 'report_rank%d.sqlite' % r
            proc = {'pid': rng.randint(1000, 4000000), 'device': 0, 'context': 1}
            write_file(job, os.path.join(out, name), hosts[h], [(r, proc)], st, cap_start[r], cap_end[r], wrng,
                       err[h], epoch, domain_row)
            files[name] = {'ranks': [r], 'host': hosts[h]}
    else:
        for h in range(job.H):
            rs = list(range(h * GPN, (h + 1) * GPN))
            pid, procs = rng.randint(1000, 400000), []
            for i, r in enumerate(rs):
                pid += rng.randint(1, 4)
                procs.append((r, {'pid': pid, 'device': i, 'context': i + 1}))
            name = 'node%02d.sqlite' % h
            write_file(job, os.path.join(out, name), hosts[h], procs, st, min(cap_start[r] for r in rs),
                       max(cap_end[r] for r in rs), wrng, err[h], epoch, domain_row)
            files[name] = {'ranks': rs, 'host': hosts[h]}
    truth = build_truth(job, st, pending, hold, blocked, dead, hosts[:job.H], err, files, domain_row, stuck_async)
    # ---- the planted gradient all-reduce
    ops = planted_transfers(job, st)
    allv = [t for t, _ in ops]
    steady = [t for t, it in ops if it >= 1] or allv
    hs = list(range(job.H))
    model = job.fabric.allreduce(n, hs, fam['nbytes'], a.iters)
    unforced = job.fabric.allreduce(n, hs, fam['nbytes'], a.iters, algos=('RING', 'TREE'))
    med, med_s = statistics.median(allv) / 1e6, statistics.median(steady) / 1e6
    f = 2.0 * (n - 1) / n
    run = {'name': os.path.basename(out), 'dir': os.path.basename(out), 'group_size': n, 'world_size': n,
           'nodes': job.H, 'pods': len({pod_of[h] for h in hs}), 'racks': len({rack_of[h] for h in hs}),
           'collective': 'AllReduce', 'bytes': fam['nbytes'], 'ops': len(ops), 'ops_per_step': fam['buckets'],
           'time_ms': round(med, 6), 'time_ms_steady': round(med_s, 6),
           'busbw_gbps': round(fam['nbytes'] * f / (med * 1e-3) / 1e9, 4),
           'busbw_gbps_steady': round(fam['nbytes'] * f / (med_s * 1e-3) / 1e9, 4),
           'model_ms': round(model['us'] / 1000.0, 6), 'latency_ms': round(model['latency_us'] / 1000.0, 6),
           'bandwidth_ms': round(model['bandwidth_us'] / 1000.0, 6),
           'bound': 'latency' if model['latency_us'] > model['bandwidth_us'] else 'bandwidth',
           'algorithm': model['algorithm'], 'protocol': model['protocol'], 'bottleneck': model['bottleneck'],
           'ring_busbw_gbps_model': round(model['ring_busbw_gbps'], 4),
           'tuner_unforced': {'algorithm': unforced['algorithm'], 'protocol': unforced['protocol'],
                              'ms': round(unforced['us'] / 1000.0, 6)},
           'kernel': 'ncclDevKernel_AllReduce_Sum_f32_RING_LL' if job.new else 'ncclKernel_AllReduce_RING_LL_Sum_float',
           'step_ms': truth['step_ms_true'], 'files': a.files, 'schema': a.schema, 'payloads': bool(payloads),
           'iterations': a.iters, 'slow_link': a.fault[0] if a.fault else None}
    truth['scaling'] = run
    truth['generator'] = 'tests/indep/indep_scaling.py'
    with open(os.path.join(out, 'truth.json'), 'w') as fh:
        json.dump(truth, fh, indent=1)
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('out')
    ap.add_argument('--scenario', required=True, choices=('pod', 'flat', 'small', 'slowlink', 'seed'))
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--payloads', action='store_true',
                    help='NCCL NVTX payloads (comm id, message size) in NVTX_EVENTS.binaryData (schema 3.25, blobs)')
    ap.add_argument('--iters', type=int, default=4)
    ap.add_argument('--scales', default=','.join(map(str, SCALES)), help='world sizes, multiples of 8 up to 512')
    ap.add_argument('--files', choices=('rank', 'host'), default=None, help='default: by seed (odd: rank, even: host)')
    ap.add_argument('--schema', choices=('3.25', '3.0'), default=None,
                    help='default 3.25; without --payloads 3.0 on seeds = 2 mod 3')
    ap.add_argument('--markers', dest='markers', action='store_true', default=None)
    ap.add_argument('--no-markers', dest='markers', action='store_false')
    ap.add_argument('--ddl-dir', default=DEFAULT_DDL_DIR)
    a = ap.parse_args()
    if a.files is None:
        a.files = 'rank' if a.seed % 2 else 'host'
    if a.schema is None:
        a.schema = '3.0' if (not a.payloads and a.seed % 3 == 2) else '3.25'
    if a.payloads and a.schema != '3.25':
        raise SystemExit('--payloads needs --schema 3.25 (no binaryData column before 3.16)')
    if a.markers is None:
        a.markers = a.seed % 4 in (0, 3)
    scales = sorted(int(x) for x in a.scales.split(','))
    if any(n % GPN or n > 512 or n < 16 for n in scales):
        raise SystemExit('--scales: multiples of 8 from 16 to 512')
    fam = draw_family(a.scenario, a.seed)
    H = 512 // GPN
    frng = random.Random(a.seed * 104729 + 71)
    style = HOST_STYLES[a.seed % len(HOST_STYLES)]
    hbase = frng.randint(1, 60)
    hosts = [style % (hbase + h) for h in range(H)]
    pod_of = {h: h // fam['pod_nodes'] for h in range(H)}
    rack_of = {h: h // NODES_PER_RACK for h in range(H)}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, 'topology.txt'), 'w') as fh:
        fh.write('# topology of the %s family, seed %d (tests/indep/indep_scaling.py)\n' % (a.scenario, a.seed))
        fh.write('# HOSTNAME RACK POD   (%d nodes of %d GPUs per rack, %d nodes per pod)\n' % (
            NODES_PER_RACK, GPN, fam['pod_nodes']))
        for h in range(H):
            first = h == 0 or pod_of[h] != pod_of[h - 1]
            fh.write('%s\track%02d\tpod%d%s\n' % (hosts[h], rack_of[h], pod_of[h],
                                                   '    # first node of pod%d' % pod_of[h] if first else ''))
    runs = []
    for n in scales:
        t0 = time.time()
        run = make_run(fam, n, a, os.path.join(a.out, 'n%d' % n), hosts, pod_of, rack_of)
        runs.append(run)
        print('%s/n%d: %d ranks %d nodes %d pods, %s %s, %d B x %d/step: planted %.3f ms (model %.3f, lat %.3f + bw %.3f, '
              '%s-bound), busbw %.2f GB/s, bottleneck %s, step %.2f ms [%.1f s]' % (
                  a.out, n, n, run['nodes'], run['pods'], run['algorithm'], run['protocol'], run['bytes'],
                  run['ops_per_step'], run['time_ms'], run['model_ms'], run['latency_ms'], run['bandwidth_ms'],
                  run['bound'], run['busbw_gbps'], run['bottleneck'], run['step_ms'], time.time() - t0))
    big = max(scales)
    exp = {'cliff_group_size': big if a.scenario in CAUSE and big == 512 else None,
           'cause': CAUSE.get(a.scenario) if big == 512 else None, 'hosts': [], 'host_index': [],
           'no_bandwidth_cliff': a.scenario in ('flat', 'small') or big < 512,
           'largest_bound': 'latency' if a.scenario == 'small' else None,
           'bandwidth_causes': ['pod_boundary', 'rack_boundary', 'node_boundary', 'slow_link']}
    if a.scenario == 'slowlink' and big == 512:
        exp['host_index'] = fam['slow']['hosts']
        exp['hosts'] = [hosts[h] for h in fam['slow']['hosts']]
    truth = {'generator': 'tests/indep/indep_scaling.py', 'scenario': a.scenario, 'seed': a.seed,
             'payloads': bool(a.payloads), 'schema': a.schema, 'files': a.files, 'markers': a.markers,
             'iterations': a.iters, 'gpus_per_host': GPN, 'layout': '1x1xN (pure data parallel)',
             'collective': 'AllReduce', 'bytes': fam['nbytes'], 'ops_per_step': fam['buckets'],
             'noise_sigma': fam['noise_sigma'], 'fabric': fam['fabric'], 'pod_nodes': fam['pod_nodes'],
             'nodes_per_rack': NODES_PER_RACK, 'slow_link': fam['slow'], 'hosts': hosts,
             'topology': 'topology.txt', 'runs': runs, 'expected': exp,
             'time_definition': 'median over the run\'s gradient all-reduce ops of (end - last member\'s kernel start), '
                                'per op the median over members; time_ms_steady: iterations >= 1 only',
             'busbw_definition': 'bytes * 2(n-1)/n / time (GB/s = 1e9 B/s), nccl-tests doc/PERFORMANCE.md'}
    if a.scenario == 'seed':
        truth['targets_ms'] = SEED_TARGETS_MS
    with open(os.path.join(a.out, 'scaling_truth.json'), 'w') as fh:
        json.dump(truth, fh, indent=1)
    print('%s: %s seed %d, expected cliff at %s (%s)%s' % (
        a.out, a.scenario, a.seed, exp['cliff_group_size'], exp['cause'],
        ', slow link %s' % exp['hosts'] if exp['hosts'] else ''))


if __name__ == '__main__':
    main()
