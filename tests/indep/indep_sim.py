#!/usr/bin/python3
"""Independent Megatron-style 1F1B training replay that writes Nsight Systems SQLite exports.

Written without reading straggler-scan's analyser or its own generator (src/sim). Only the nsys
DDL dumps, the export notes, the verdict contract and the real sample exports were used.
See tests/indep/README.md for what is modelled and why.
"""
import argparse, json, os, random, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from indep_model import DEFAULT_DDL_DIR, Job
from indep_replay import simulate
from indep_export import write_file
from indep_kineto import write_kineto
from indep_truth import build_truth
from indep_pipe import pipeline_truth

HOST_STYLES = ['gpu-st-p5-48xlarge-%d', 'dgx-h100-%03d', 'hgx%04d', 'node%02d.cluster.local']


def make_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('out')
    ap.add_argument('--layout', default='2x2x4', help='TPxPPxDP')
    ap.add_argument('--gpus-per-host', type=int, default=4, choices=(1, 2, 4, 8))
    ap.add_argument('--iters', type=int, default=12)
    ap.add_argument('--microbatches', type=int, default=0)
    ap.add_argument('--layers', type=int, default=2, help='transformer layers per stage (all its model chunks together)')
    ap.add_argument('--schedule', choices=('1f1b', 'gpipe', 'interleaved'), default='1f1b',
                    help='pipeline schedule (interleaved: Megatron interleaved 1F1B, --virtual-stages chunks per stage)')
    ap.add_argument('--virtual-stages', type=int, default=1,
                    help='model chunks per stage for --schedule interleaved (each --layers/V layers)')
    ap.add_argument('--balanced-stages', action='store_true',
                    help='layer kernels of the first and last (virtual) stage shortened by the time of the embedding '
                    'and of the output layer + loss, so that every stage does the same work per microbatch')
    ap.add_argument('--act-mb', type=float, default=16.0, help='activation / TP all-reduce / p2p message, MiB')
    ap.add_argument('--grad-mb', type=float, default=300.0, help='gradient bytes per DP rank, MiB')
    ap.add_argument('--intra-gbps', type=float, default=180.0)
    ap.add_argument('--inter-gbps', type=float, default=45.0)
    ap.add_argument('--dp-mode', choices=('ar', 'rsag'), default='ar')
    ap.add_argument('--dp-overlap', action='store_true',
                    help='DP gradient buckets reduced during the last microbatch backward (DDP / overlap_grad_reduce)')
    ap.add_argument('--dp-bucket-layers', type=int, default=1, help='with --dp-overlap: one bucket per K layers')
    ap.add_argument('--cpu-lead-ms', type=float, default=0.0,
                    help='the host blocks in a launch call while the compute stream is more than this far behind '
                    '(launch queue / host syncs); 0: unlimited, the host runs a whole step ahead')
    ap.add_argument('--jitter', type=float, default=2.0, help='per-kernel duration noise, %% (log-normal sigma); '
                    'above 2 also rare 1.2-1.8x outliers')
    ap.add_argument('--one-shot', action='store_true',
                    help='one short compute phase after a one-time NVRTC compile and module loading; no iterations')
    ap.add_argument('--schema', choices=('3.25', '3.0'), default='3.25')
    ap.add_argument('--files', choices=('rank', 'host'), default='rank')
    ap.add_argument('--naming', choices=('plain', 'hostname'), default='plain',
                    help='per-rank names: report_rank{r} or nsys_{hostname}_rank{r}')
    ap.add_argument('--markers', action='store_true', help='ProfilerStep#N NVTX ranges')
    ap.add_argument('--no-nccl-nvtx', dest='nccl_nvtx', action='store_false')
    ap.add_argument('--clock-error-ms', type=float, default=2.0)
    ap.add_argument('--fault', action='append', default=[],
                    help='slow_gpu:R:I:F host_delay:R:I:MS extra_work:R:I:F slow_link:H1:H2:F[:I] crash:R:I stuck:R:I '
                    'tiny_kernels:R|all:COUNT[:I] nccl_bracketed[:R|all] copy_bubbles:R|all:MIB[:I] '
                    'pageable_h2d:R|all:MIB[:I] gc_pause:R|all:EVERY:MS stage_imbalance:STAGE:F[:I] slow_p2p:F[:I] '
                    '(see README.md)')
    ap.add_argument('--format', choices=('sqlite', 'kineto'), default='sqlite',
                    help='sqlite: Nsight Systems exports (default); kineto: PyTorch profiler Chrome-trace JSON, one '
                    'file per rank (2023 style with --schema 3.0, 2024 style otherwise; README.md "Kineto output")')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--ddl-dir', default=DEFAULT_DDL_DIR)
    return ap


def main():
    a = make_parser().parse_args()
    if a.one_shot:                                     # one compute phase: no steps, no step markers
        a.iters, a.markers = 1, False
    job = Job(a)
    st, pending, hold, blocked, dead, progs, stuck_async = simulate(job)
    rng = random.Random(a.seed * 104729 + 17)
    style = HOST_STYLES[a.seed % len(HOST_STYLES)]
    hbase = rng.randint(1, 60)
    hosts = [style % (hbase + h) for h in range(job.H)]
    err = [rng.choice((-1, 1)) * rng.uniform(0.02, max(0.03, a.clock_error_ms)) * 1e6 for _ in range(job.H)]
    err = [int(e) for e in err]
    epoch = 1_780_000_000 * 10**9 + a.seed * 86_400 * 10**9
    t_last = max(s.stopped_at for s in st)
    t_kill = t_last + int(60e9) + rng.randint(0, int(2e9)) if dead else None
    crashed = {f['rank'] for f in job.faults if f['kind'] == 'crash' and f['rank'] in dead}
    cap_end = []
    for r, s in enumerate(st):
        if r in crashed: cap_end.append(s.stopped_at + rng.randint(int(2e8), int(9e8)))
        elif dead: cap_end.append(t_kill)
        else: cap_end.append(s.stopped_at + rng.randint(int(5e8), int(2e9)))
    cap_start = [-rng.randint(int(4e9), int(25e9)) for _ in range(job.n)]
    os.makedirs(a.out, exist_ok=True)
    files = {}
    domain_row = rng.random() < 0.5
    wrng = random.Random(a.seed * 13 + 1)
    kconv = None
    if a.format == 'kineto':
        files, kconv = write_kineto(job, a.out, st, progs, hosts, err, epoch, cap_start, cap_end,
                                    random.Random(a.seed * 7919 + 5))
    elif a.files == 'rank':
        for r in range(job.n):
            h = job.host(r)
            name = 'report_rank%d.sqlite' % r if a.naming == 'plain' else 'nsys_%s_rank%d.sqlite' % (hosts[h].split('.')[0], r)
            proc = {'pid': rng.randint(1000, 4000000), 'device': 0, 'context': 1}
            write_file(job, os.path.join(a.out, name), hosts[h], [(r, proc)], st, cap_start[r], cap_end[r], wrng,
                       err[h], epoch, domain_row)
            files[name] = {'ranks': [r], 'host': hosts[h]}
    else:
        for h in range(job.H):
            rs = list(range(h * job.G, min((h + 1) * job.G, job.n)))
            base = rng.randint(1000, 400000)
            procs, pid = [], base
            for i, r in enumerate(rs):                     # torchrun children: increasing, unique pids
                pid += rng.randint(1, 4)
                procs.append((r, {'pid': pid, 'device': i, 'context': i + 1}))
            name = 'node%02d.sqlite' % h
            write_file(job, os.path.join(a.out, name), hosts[h], procs, st, min(cap_start[r] for r in rs),
                       max(cap_end[r] for r in rs), wrng, err[h], epoch, domain_row)
            files[name] = {'ranks': rs, 'host': hosts[h]}
    truth = build_truth(job, st, pending, hold, blocked, dead, hosts, err, files, domain_row, stuck_async)
    if kconv:
        truth['conventions'].update(kconv)
    if job.pp > 1:
        truth['pipeline'] = pipeline_truth(job, st)
    with open(os.path.join(a.out, 'truth.json'), 'w') as f:
        json.dump(truth, f, indent=1)
    print('%s: %d ranks, %d files, step %.2f ms, stragglers %s, desync %d ops, findings %s' % (
        a.out, job.n, len(files), truth['step_ms_true'], [x['rank'] for x in truth['stragglers']], len(truth['desync']),
        ['%s%s' % (x['finding'], x['ranks'] if len(x['ranks']) < 6 else '[%d ranks]' % len(x['ranks']))
         for x in truth['findings']]))
    if job.pp > 1:
        p = truth['pipeline']
        print('  pipeline %s P=%d M=%d V=%d: bubble %s (theory %.4f), per stage %s, bottleneck %s, causes %s' % (
            p['schedule'], p['pp'], p['microbatches'], p['virtual_stages'], p['bubble_measured'],
            p['bubble_theoretical'], p['per_stage'], p['bottleneck_stage'], p['expected_causes']))


if __name__ == '__main__':
    main()

