#!/usr/bin/python3
"""Check straggler-scan's `what_if` and `waterfall` against a counterfactual run (tests/indep, what-if family).

  check_what_if.py FAULTY_SUMMARY.json CF_SUMMARY.json FAULTY_TRUTH.json [--cf-truth CF_TRUTH.json]
                   [--fix R[,R...]|all] [--tol-pct 3] [--json OUT.json]

The counterfactual is the same run (same seed and options) written without the fault(s) of the ranks being fixed,
and scanned by the tool too. Checks, one line each (PASS / FAIL; INFO and SKIP lines are notes):
 (a) every planted, observable straggler of the faulty run (truth `stragglers`) is named in the summary's
     `stragglers` (and, with --cf-truth, the counterfactual's own planted stragglers in its summary);
 (b) the `what_if` row that fixes those ranks (kind fix_rank with ranks == [R]; for several ranks the fix_all row
     with exactly those ranks) has step_ms within --tol-pct of the counterfactual's measured step over the faulty
     summary's what_if.from_iteration..to_iteration. The counterfactual's step comes from its truth.json
     (`counterfactual.iteration_step_ms`: the simulator's per-iteration job step, independent of the tool) when
     --cf-truth is given, else from the counterfactual summary's what_if.step_ms_actual (its own window);
     the line says which;
 (c) every `waterfall` phase's parts add up to its step_ms within 1% (faulty and counterfactual summaries);
 (d) with --cf-truth: the counterfactual drew the same noise (per-rank RNG digests for every rank the removed
     faults do not touch, and the shared collective-noise digest), i.e. it is exact.
Exit 1 on any FAIL.
"""
import argparse, json, sys


def load(p):
    with open(p) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('summary')
    ap.add_argument('cf_summary')
    ap.add_argument('truth')
    ap.add_argument('--cf-truth')
    ap.add_argument('--fix', help='ranks the counterfactual fixes (default: the ranks of the faults it lacks, '
                    'else every planted straggler)')
    ap.add_argument('--tol-pct', type=float, default=3.0)
    ap.add_argument('--wf-tol-pct', type=float, default=1.0)
    ap.add_argument('--json')
    a = ap.parse_args()
    summ, cfs, truth = load(a.summary), load(a.cf_summary), load(a.truth)
    cft = load(a.cf_truth) if a.cf_truth else None
    res = {'pass': 0, 'fail': 0}

    def say(ok, msg):
        tag = {True: 'PASS', False: 'FAIL', None: 'INFO', 'skip': 'SKIP'}[ok]
        if ok is True: res['pass'] += 1
        if ok is False: res['fail'] += 1
        print('%-5s %s' % (tag, msg))

    planted = [x['rank'] for x in truth.get('stragglers', [])]
    # ---- (a) stragglers named
    named = [x.get('rank') for x in (summ.get('stragglers') or [])]
    for r in planted:
        say(r in named, '(a) straggler %d named in stragglers %s' % (r, named[:8]))
    for u in truth.get('unobservable', []):
        if 'rank' in u:
            say(None, '(a) planted but unobservable: rank %s (%s)' % (u['rank'], u.get('why')))
    if cft is not None:
        cnamed = [x.get('rank') for x in (cfs.get('stragglers') or [])]
        for x in cft.get('stragglers', []):
            say(x['rank'] in cnamed, '(a) counterfactual: its straggler %d named in stragglers %s' % (x['rank'], cnamed[:8]))

    # ---- which ranks the counterfactual fixes
    removed = []
    if a.fix:
        fix = sorted(planted) if a.fix == 'all' else sorted(int(x) for x in a.fix.split(','))
        how = '--fix'
    elif cft is not None:
        kept = [json.dumps(f, sort_keys=True) for f in cft.get('faults', [])]
        removed = [f for f in truth.get('faults', []) if json.dumps(f, sort_keys=True) not in kept]
        fix = sorted({f['rank'] for f in removed if isinstance(f.get('rank'), int)})
        how = 'faults the counterfactual lacks: %s' % ['%s:%s' % (f['kind'], f.get('rank')) for f in removed]
    else:
        fix, how = sorted(planted), 'every planted straggler'
    res['fix'] = fix

    # ---- (b) the what-if row against the counterfactual's measured step
    wi = summ.get('what_if')
    out = {}
    if not isinstance(wi, dict) or not wi.get('changes'):
        say(False, '(b) the summary has no what_if (or no changes)')
    elif not fix:
        say('skip', '(b) nothing to fix (%s)' % how)
    else:
        lo, hi = wi.get('from_iteration'), wi.get('to_iteration')
        rows = wi['changes']
        if len(fix) == 1:
            cand = [x for x in rows if x.get('kind') == 'fix_rank' and x.get('ranks') == fix]
            want = 'fix_rank %s' % fix
        else:
            cand = [x for x in rows if x.get('kind') == 'fix_all' and sorted(x.get('ranks') or []) == fix]
            want = 'fix_all %s' % fix
        cf_step, src = None, None
        if cft is not None and isinstance(lo, int) and isinstance(hi, int):
            st = cft.get('counterfactual', {}).get('iteration_step_ms', {})
            vals = [st.get(str(i)) for i in range(lo, hi + 1)]
            if vals and None not in vals:
                cf_step, src = sum(vals) / len(vals), 'cf truth, iterations %d..%d' % (lo, hi)
            ft = truth.get('counterfactual', {}).get('iteration_step_ms', {})
            fv = [ft.get(str(i)) for i in range(lo, hi + 1)]
            if fv and None not in fv:
                out['faulty_step_truth'] = sum(fv) / len(fv)
        if cf_step is None:
            cw = cfs.get('what_if') or {}
            if isinstance(cw.get('step_ms_actual'), (int, float)):
                cf_step = cw['step_ms_actual']
                src = 'cf summary what_if.step_ms_actual (its window %s..%s)' % (cw.get('from_iteration'), cw.get('to_iteration'))
        out.update({'window': [lo, hi], 'step_ms_actual': wi.get('step_ms_actual'), 'cf_step': cf_step,
                    'cf_source': src, 'want': want})
        if 'faulty_step_truth' in out and isinstance(wi.get('step_ms_actual'), (int, float)):
            e = 100 * (wi['step_ms_actual'] - out['faulty_step_truth']) / out['faulty_step_truth']
            say(None, '(b) faulty run: step_ms_actual %.3f ms, truth over %s..%s %.3f ms (%+.2f%%)' % (
                wi['step_ms_actual'], lo, hi, out['faulty_step_truth'], e))
        if not cand:
            say(False, '(b) no what_if row %s (%s); rows: %s' % (want, how, [(x.get('kind'), x.get('ranks')) for x in rows]))
        elif cf_step is None:
            say(False, '(b) no counterfactual step (no cf truth iterations %s..%s, no cf what_if)' % (lo, hi))
        else:
            row = cand[0]
            err = 100 * (row['step_ms'] - cf_step) / cf_step
            out.update({'row_step': row['step_ms'], 'err_pct': err})
            say(abs(err) <= a.tol_pct, '(b) %s: what-if step %.3f ms, counterfactual %.3f ms (%s), error %+.2f%% '
                '(tol %.1f%%; faulty %.3f ms)' % (want, row['step_ms'], cf_step, src, err, a.tol_pct,
                                                 wi.get('step_ms_actual') or float('nan')))
    res.update(out)

    # ---- (c) waterfall parts add up
    for label, s in (('faulty', summ), ('counterfactual', cfs)):
        wf = s.get('waterfall')
        if not isinstance(wf, list) or not wf:
            say(False, '(c) %s summary: no waterfall phases' % label)
            continue
        worst = 0.0
        for ph in wf:
            tot = sum(p.get('ms', 0) or 0 for p in ph.get('parts', []))
            sm = ph.get('step_ms') or 0
            dev = 100 * abs(tot - sm) / sm if sm else float('inf')
            worst = max(worst, dev)
            if dev > a.wf_tol_pct:
                say(False, '(c) %s waterfall %s..%s: parts add up to %.3f ms, step_ms %.3f ms (%.2f%%)' % (
                    label, ph.get('from_iteration'), ph.get('to_iteration'), tot, sm, dev))
        if worst <= a.wf_tol_pct:
            say(True, '(c) %s waterfall: %d phase(s), parts add up to step_ms (worst %.4f%%)' % (label, len(wf), worst))

    # ---- (d) the counterfactual is exact: same noise
    if cft is not None:
        fc, cc = truth.get('counterfactual', {}), cft.get('counterfactual', {})
        fd, cd = fc.get('rank_rng_digest'), cc.get('rank_rng_digest')
        if not fd or not cd:
            say('skip', '(d) no noise digests in the truth files')
        else:
            touched = {f['rank'] for f in removed if isinstance(f.get('rank'), int)} | set(fix)
            if any(f.get('rank') == 'all' for f in removed):
                touched = set(int(r) for r in fd)
            differ = sorted(int(r) for r in fd if r in cd and fd[r] != cd[r] and int(r) not in touched)
            same_fixed = sorted(int(r) for r in touched if fd.get(str(r)) == cd.get(str(r)))
            say(not differ and fc.get('collective_noise_digest') == cc.get('collective_noise_digest'),
                '(d) counterfactual noise: %d untouched ranks, %s differ; collective noise %s (%d ops)%s' % (
                    len(fd) - len(touched), differ or 'none', 'same' if fc.get('collective_noise_digest') ==
                    cc.get('collective_noise_digest') else 'DIFFERENT', cc.get('collective_ops', 0),
                    '; fixed ranks with the same draws too: %s' % same_fixed if same_fixed else ''))
    print('RESULT pass=%d fail=%d' % (res['pass'], res['fail']))
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(res, f, indent=1)
    sys.exit(1 if res['fail'] else 0)


if __name__ == '__main__':
    main()
