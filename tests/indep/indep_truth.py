"""truth.json of tests/indep/indep_sim.py: what was planted and what of it can be seen."""
import hashlib, statistics

# fault kind -> (verdict cause, root_cause_hint, other causes a careful reader could defend)
STRAGGLER_KINDS = {'slow_gpu': ('slow_gpu', None, []), 'host_delay': ('host_delay', None, []),
                   'extra_work': ('extra_work', None, []),
                   'tiny_kernels': ('host_delay', 'small_kernels', ['extra_work']),
                   'copy_bubbles': ('host_delay', 'copy_bubbles', []),
                   'pageable_h2d': ('host_delay', 'pageable_h2d', []),
                   'gc_pause': ('host_delay', 'gc_pause', [])}
# findings (summary-contract `findings`, book-of-root-causes names) this simulator can plant
FINDING_KINDS = ['small_kernels', 'module_loading', 'gc_pause', 'excessive_h2d']
FINDING_OF = {'tiny_kernels': 'small_kernels', 'copy_bubbles': 'excessive_h2d', 'pageable_h2d': 'excessive_h2d',
              'gc_pause': 'gc_pause'}


def observable_straggler(job, f, hold, step_ms):
    """A fault is observable when the rank really holds others back after onset (truth, not a guess)."""
    r, I, N = f['rank'], f['iter'], job.a.iters
    if I > N - 3:
        return False, 'onset %d leaves fewer than 3 iterations' % I
    before = [hold.get((r, i), 0) for i in range(1, I)]
    after = [hold.get((r, i), 0) for i in range(I, N)]
    b = sum(before) / len(before) if before else 0.0
    d = (sum(after) / len(after) - b) / 1e6
    need = max(1.0, 0.02 * step_ms)
    if d < need:
        return False, 'holds peers back only %.2f ms per step more after onset (< %.2f ms)' % (d, need)
    return True, 'holds peers back %.2f ms per step more after onset' % d


def med(xs):
    return statistics.median(xs) if xs else 0.0


def rank_windows(job, st, step_ms):
    """per rank: the window shares are measured against (the step, or the one compute phase of --one-shot)"""
    out = {}
    for r, s in enumerate(st):
        if step_ms > 0:
            out[r] = step_ms
        elif s.sync:
            t0 = s.jit['end'] if s.jit else s.it_start.get(0, 0)
            out[r] = max(1e-3, (s.sync[-1][1] - t0) / 1e6)
        else:
            out[r] = 0.0
    return out


def plant_findings(job, st, step_ms, dead):
    """expected findings, measured in the replay; returns (findings, unobservable findings, stats)"""
    a = job.a
    win = rank_windows(job, st, step_ms)
    bar = max(1.0, 0.02 * step_ms)
    first = 1 if a.iters >= 3 else 0                 # iteration 0 is the warm-up
    got, unobs, stats = {}, [], {}

    def add(kind, r, why):
        got.setdefault(kind, {}).setdefault(r, why)

    def ranks_of(f):
        return [r for r in (range(job.n) if f['rank'] == 'all' else [f['rank']]) if r not in dead]

    for f in job.faults:
        kind = FINDING_OF.get(f['kind'])
        if kind is None:
            continue
        for r in ranks_of(f):
            s = st[r]
            its = [i for i in range(max(first, f['iter']), a.iters) if i in s.it_start]
            if f['kind'] == 'tiny_kernels':
                idle = {i: 0 for i in its}; cnt = {i: 0 for i in its}
                for (i, count, g0, g1, busy) in s.storms:
                    if i in idle:
                        idle[i] += g1 - g0 - busy; cnt[i] += count
                im, cm = med(list(idle.values())) / 1e6, med(list(cnt.values()))
                stats.setdefault('small_kernels', {})[str(r)] = {'tiny_kernels_per_step': cm, 'gpu_idle_ms_per_step': round(im, 3)}
                ok = im >= bar and cm >= 50
                why = '%d kernels of 2-5 us per step, each launched by a 8-11 us call; GPU idle between them %.2f ms per step' % (cm, im)
            elif f['kind'] in ('copy_bubbles', 'pageable_h2d'):
                sh = med([s.h2d.get(i, 0) / 1e6 / win[r] for i in its]) if win[r] else 0.0
                stats.setdefault('excessive_h2d', {})[str(r)] = {'h2d_share_of_step': round(sh, 4)}
                ok = sh >= 0.05
                why = 'pageable H2D copies %.1f%% of the %s (threshold 5%%); SM idle while the copy engine is busy' % (
                    100 * sh, 'step' if step_ms else 'compute phase')
            else:                                    # gc_pause
                gaps = [gap / 1e6 for (i, c0, c1, gap) in s.gcs]
                gm = med(gaps)
                stats.setdefault('gc_pause', {})[str(r)] = {'pauses': len(gaps), 'median_gpu_gap_ms': round(gm, 3)}
                ok = len(gaps) >= 3 and gm >= bar
                why = '%d host pauses of %.0f ms mid-step, every %d iterations; GPU gap median %.2f ms (needs >= 3 and >= %.2f ms)' % (
                    len(gaps), f['ms'], f['every'], gm, bar)
                if gm < bar and not a.cpu_lead_ms:
                    why += '; the host runs a step ahead of the GPU and absorbs the pause (see --cpu-lead-ms)'
            if ok:
                add(kind, r, why)
            else:
                unobs.append({'finding': kind, 'rank': r, 'fault': f, 'why': why})
    if a.one_shot:
        for r, s in enumerate(st):
            if s.jit and r not in dead:
                add('module_loading', r, 'NVRTC compile %.0f ms then %d cuLibraryLoadData calls (%.1f ms) before the first kernels; once' % (
                    s.jit['compile_ns'] / 1e6, s.jit['libraries'], s.jit['library_load_ns'] / 1e6))
    findings = [{'finding': k, 'ranks': sorted(v), 'why': v[min(v)]} for k, v in got.items()]
    return findings, unobs, stats


def nccl_share(job, st):
    """largest share of a rank's busy window spent in NCCL kernels (waiting included)"""
    best = 0.0
    for s in st:
        ks = [k for k in s.kern if (job.a.iters < 3 or k[0] >= s.it_start.get(1, 0))]
        if not ks:
            continue
        span = max(k[1] for k in ks) - min(k[0] for k in ks)
        nccl = sum(k[1] - k[0] for k in ks if k[5] == 'nccl')
        if span > 0:
            best = max(best, nccl / span)
    return best


def dp_overlap_picture(job, st, stuck_async):
    """for each rank that launched an overlapped bucket that never ran: what kept running after that launch"""
    rows = []
    for r, lst in sorted(stuck_async.items()):
        s = st[r]
        lst = [x for x in lst if not x[1].get('p2p')]      # isend/irecv of the pipeline are no buckets
        if not lst:
            continue
        key, rec, on_gpu = min(lst, key=lambda kv: kv[1]['launch'])
        t = rec['launch']
        later = [k for k in s.kern if k[1] > t]
        launched_at = {c: a0 for (a0, _b, c, _api, _cls) in s.rt}
        after = [k for k in later if launched_at.get(k[3], 0) > t]     # launched after the stuck bucket, still ran
        rows.append({'rank': r, 'communicator': key[0][0], 'key': list(map(str, key[0])), 'seq': key[1],
                     'stream_reached_it': on_gpu,
                     'kernels_completed_after_launch': len(later),
                     'nccl_kernels_completed_after_launch': sum(1 for k in later if k[5] == 'nccl'),
                     'last_kernel_end_after_launch_ms': round((max(k[1] for k in later) - t) / 1e6, 3) if later else 0.0,
                     'kernels_launched_later_that_ran': len(after),
                     'nccl_kernels_launched_later_that_ran': sum(1 for k in after if k[5] == 'nccl')})
    return rows


BATCH_BYTES = 4 * 4096 * 8 * 2                      # the step's batch copy (indep_model.build_program)


def counterfactual_truth(job, st, dead):
    """truth `counterfactual` (what-if family, tests/indep/check_what_if.py): the job's measured step per iteration
    and digests of the noise every rank and every collective drew, so that a faulty run and the same run without
    the fault can be compared step for step and shown to share their noise"""
    starts = {}                                     # rank -> iteration -> start of its batch copy (first GPU op)
    for r, s in enumerate(st):
        b = sorted(m[0] for m in s.mcpy if len(m) == 6 and m[5] == 1 and m[4] == BATCH_BYTES)
        if r not in dead:
            starts[r] = {i: t for i, t in zip(sorted(s.it_start), b)}
    steps = {}
    for i in range(job.a.iters - 1):
        d = [(v[i + 1] - v[i]) / 1e6 for r, v in starts.items() if i in v and i + 1 in v and r not in dead]
        if d:
            steps[str(i)] = round(med(d), 6)
    nl = getattr(job, 'noise_log', {})
    h = hashlib.sha1()
    for k in sorted(nl, key=str):
        h.update(repr((k, nl[k])).encode())
    return {'iteration_step_ms': steps,
            'step_definition': 'iteration i: from the start of its batch H2D copy (the first GPU work of the step) '
                               'to that of i+1, per rank; the median over ranks',
            'rank_rng_digest': {str(r): '%016x' % s.rng.digest for r, s in enumerate(st) if hasattr(s.rng, 'digest')},
            'rank_rng_draws': {str(r): s.rng.draws for r, s in enumerate(st) if hasattr(s.rng, 'draws')},
            'collective_noise_digest': h.hexdigest()[:16], 'collective_ops': len(nl)}


def build_truth(job, st, pending, hold, blocked, dead, hosts, err, files, domain_row, stuck_async):
    a = job.a
    # true step time from the stream-synchronize ends of rank 0's pipeline peers (all ranks finish together)
    ends = {}
    for r, s in enumerate(st):
        for i, (t0, t1, _c, _s) in enumerate(s.sync):
            ends.setdefault(i, []).append(t1)
    it_end = [max(ends[i]) for i in sorted(ends)]
    steps = [(it_end[i] - it_end[i - 1]) / 1e6 for i in range(2, len(it_end))]
    step_ms = sorted(steps)[len(steps) // 2] if steps else 0.0
    stragglers, unobs, slow_links = [], [], []
    hang_it = min((s.it for s in st if s.dead), default=None)
    for f in job.faults:
        if f['kind'] in STRAGGLER_KINDS:
            cause, hint, alt = STRAGGLER_KINDS[f['kind']]
            if f['rank'] == 'all':
                unobs.append({'rank': 'all', 'fault': f, 'why': 'every rank has it: nobody waits on anybody'})
                continue
            ok, why = observable_straggler(job, f, hold, step_ms)
            if f['kind'] == 'gc_pause' and ok:          # intermittent: a pattern needs a few occurrences
                npause = len(st[f['rank']].gcs)
                if npause < 3:
                    ok, why = False, 'only %d pauses in the capture (%s)' % (npause, why)
            if f['rank'] in dead or (dead and f['iter'] >= hang_it):
                ok, why = False, 'the run hangs before enough iterations follow the onset'
            row = {'rank': f['rank'], 'cause': cause, 'onset_iteration': f['iter'],
                   'host': hosts[job.host(f['rank'])], 'fault': f, 'why': why}
            # what the job's step loses (mean step after onset - mean step of iterations 2..onset-1)
            dur = {i: (it_end[i] - it_end[i - 1]) / 1e6 for i in range(2, len(it_end))}
            bef = [dur[i] for i in dur if i < f['iter']]
            aft = [dur[i] for i in dur if i >= f['iter']]
            if bef and aft:
                c = sum(aft) / len(aft) - sum(bef) / len(bef)
                row['cost_ms_per_step'] = round(c, 3)
                row['cost_pct'] = round(100 * c / (sum(bef) / len(bef)), 2)
            if hint:
                row['root_cause_hint'] = hint
            if alt:
                row['cause_alternatives'] = alt
            (stragglers if ok else unobs).append(row)
        elif f['kind'] == 'slow_link':
            ha, hb = f['hosts']
            used, alike, narrow = [], [], None
            for key, (kind, members) in job.comms.items():
                hs = sorted({job.host(m) for m in members})
                if len(hs) < 2: continue
                edges = {tuple(sorted((hs[i], hs[(i + 1) % len(hs)]))) for i in range(len(hs))}
                (used if (ha, hb) in edges else alike).append((kind, len(hs)))
                if (ha, hb) in edges:
                    narrow = set(hs) if narrow is None else narrow & set(hs)
            comparable = any(x[:2] in [y[:2] for y in alike] for x in used)
            row = {'hosts': [hosts[ha], hosts[hb]], 'host_index': [ha, hb], 'factor': f['factor'], 'fault': f,
                   'narrowest_host_index': sorted(narrow or {ha, hb})}   # hosts every slowed communicator shares
            if used and comparable and f['factor'] >= 1.5:
                slow_links.append(row)
            else:
                row['why'] = ('no communicator crosses the link' if not used else
                              'no comparable communicator avoids the link' if not comparable else 'factor < 1.5')
                unobs.append(row)
        elif f['kind'] in ('crash', 'stuck'):
            if f['rank'] not in dead:
                unobs.append({'fault': f, 'why': 'iteration beyond the run'})
    # ---- findings (summary `findings`): planted, measured, and what must not be reported
    findings, f_unobs, f_stats = plant_findings(job, st, step_ms, dead)
    planted = {x['finding'] for x in findings} | {x['finding'] for x in f_unobs}
    absent = [k for k in FINDING_KINDS if k not in planted]
    share = nccl_share(job, st)
    serial_note = None
    if any(f['kind'] == 'nccl_bracketed' for f in job.faults) or (a.dp_overlap and job.dp > 1):
        if share < 0.10:
            absent.append('nccl_serialization')
        else:
            serial_note = 'NCCL kernels %.1f%% of the busy window (>= 10%%): nccl_serialization neither expected nor ruled out' % (100 * share)
    # ---- desync: the first op of each communicator that some member never reached
    issued = {}
    for r, s in enumerate(st):
        for (_t, key, _c) in s.orphans:
            issued.setdefault(key, set()).add(r)
    for r, lst in stuck_async.items():
        for key, _rec, _g in lst:
            issued.setdefault(key, set()).add(r)
    desync = []
    for (key, seq), arr in sorted(pending.items(), key=lambda kv: str(kv[0])):
        kind, members = job.comms[key]
        missing = sorted(m for m in members if m not in arr)
        desync.append({'communicator': kind, 'key': list(map(str, key)), 'seq': seq, 'members': list(members),
                       'missing_ranks': missing, 'arrived_ranks': sorted(arr),
                       'launched_ranks': sorted(set(arr) | issued.get((key, seq), set())),
                       'collective': next(iter(arr.values()))['cname'],
                       'root': all(m in dead for m in missing)})
    ref = min(r for r in range(job.n))
    out = {
        'generator': 'tests/indep/indep_sim.py', 'seed': a.seed, 'ranks': job.n,
        'layout': {'tp': job.tp, 'pp': job.pp, 'dp': job.dp, 'order': 'tp-dp-pp'},
        'gpus_per_host': job.G, 'hosts': hosts, 'iterations': a.iters, 'microbatches': job.M,
        'layers_per_stage': a.layers, 'dp_mode': a.dp_mode, 'step_ms_true': round(step_ms, 3),
        'conventions': {'schema': a.schema, 'files': a.files, 'naming': a.naming, 'iteration_markers': a.markers,
                        'nccl_nvtx': a.nccl_nvtx, 'nccl_domain_create_row': domain_row and a.nccl_nvtx,
                        'device_id': 'local rank' if a.files == 'host' else 0,
                        'dp_overlap': bool(a.dp_overlap and job.dp > 1), 'one_shot': a.one_shot, 'jitter_pct': a.jitter,
                        'pageable_copy_api': {str(r): ('cudaMemcpyAsync+cudaStreamSynchronize' if s.copy_api == 'torch'
                                                       else 'cudaMemcpy') for r, s in enumerate(st) if s.h2d}},
        'files': files,
        'faults': job.faults,
        'stragglers': stragglers, 'unobservable': unobs, 'slow_links': slow_links,
        'findings': findings, 'findings_unobservable': f_unobs, 'findings_absent': absent,
        'finding_stats': f_stats, 'nccl_share_max': round(share, 4),
        'desync': desync, 'dead_ranks': dead, 'blocked_ranks': blocked,
        'clock': {'host_error_ms': {hosts[h]: err[h] / 1e6 for h in range(job.H)},
                  'reference_rank': ref,
                  'rank_offset_ms': {str(r): (err[job.host(r)] - err[job.host(ref)]) / 1e6 for r in range(job.n)}},
    }
    out['counterfactual'] = counterfactual_truth(job, st, dead)
    if serial_note:
        out['findings_note'] = serial_note
    if a.dp_overlap and job.dp > 1:
        out['dp_overlap'] = {'bucket_layers': a.dp_bucket_layers, 'blocked_buckets': dp_overlap_picture(job, st, stuck_async)}
    if a.one_shot:
        out['jit'] = {str(r): {k: (round(v / 1e6, 3) if k.endswith('_ns') else v) for k, v in s.jit.items()
                               if k not in ('start', 'end')} for r, s in enumerate(st) if s.jit}
    return out
