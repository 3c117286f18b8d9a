"""truth.json of tests/indep/indep_sim.py: what was planted and what of it can be seen."""


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



def build_truth(job, st, pending, hold, blocked, dead, hosts, err, files, domain_row):
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
    for f in job.faults:
        if f['kind'] in ('slow_gpu', 'host_delay', 'extra_work'):
            ok, why = observable_straggler(job, f, hold, step_ms)
            if f['rank'] in dead or (dead and f['iter'] >= min(s.it for s in st if s.dead)):
                ok, why = False, 'the run hangs before enough iterations follow the onset'
            row = {'rank': f['rank'], 'cause': f['kind'], 'onset_iteration': f['iter'],
                   'host': hosts[job.host(f['rank'])], 'fault': f, 'why': why}
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
        else:
            if f['rank'] not in dead:
                unobs.append({'fault': f, 'why': 'iteration beyond the run'})
    desync = []
    for (key, seq), arr in sorted(pending.items(), key=lambda kv: str(kv[0])):
        kind, members = job.comms[key]
        missing = sorted(m for m in members if m not in arr)
        desync.append({'communicator': kind, 'key': list(map(str, key)), 'seq': seq, 'members': list(members),
                       'missing_ranks': missing, 'arrived_ranks': sorted(arr),
                       'root': all(m in dead for m in missing)})
    ref = min(r for r in range(job.n))
    return {
        'generator': 'tests/indep/indep_sim.py', 'seed': a.seed, 'ranks': job.n,
        'layout': {'tp': job.tp, 'pp': job.pp, 'dp': job.dp, 'order': 'tp-dp-pp'},
        'gpus_per_host': job.G, 'hosts': hosts, 'iterations': a.iters, 'microbatches': job.M,
        'layers_per_stage': a.layers, 'dp_mode': a.dp_mode, 'step_ms_true': round(step_ms, 3),
        'conventions': {'schema': a.schema, 'files': a.files, 'naming': a.naming, 'iteration_markers': a.markers,
                        'nccl_nvtx': a.nccl_nvtx, 'nccl_domain_create_row': domain_row and a.nccl_nvtx,
                        'device_id': 'local rank' if a.files == 'host' else 0},
        'files': files,
        'faults': job.faults,
        'stragglers': stragglers, 'unobservable': unobs, 'slow_links': slow_links,
        'desync': desync, 'dead_ranks': dead, 'blocked_ranks': blocked,
        'clock': {'host_error_ms': {hosts[h]: err[h] / 1e6 for h in range(job.H)},
                  'reference_rank': ref,
                  'rank_offset_ms': {str(r): (err[job.host(r)] - err[job.host(ref)]) / 1e6 for r in range(job.n)}},
    }
