#!/usr/bin/python3
"""check.py SUMMARY.json TRUTH.json [--cf-summary CF.json]

Compares straggler-scan's summary (docs/summary-contract.md) with sim3's truth.json. One line per
check: `found`, `ok` (a measurement within tolerance), `missed`, `false` (a false alarm), `wrong`
(found but a value out of tolerance), `info`. Exit 1 on any missed / false / wrong.
Tolerances (README.md): onset +-1 iteration; cost_ms_per_step within 10% of the counterfactual
truth (20% for stalls on every rank) or 1% of the step, whichever is larger; pipeline bubble within
10% relative or 0.02 absolute; step median within 3%; crash/hang iteration +-1.
"""
import argparse, json, sys

MEGATRON_ORDERS = ('tp-dp-pp', 'tp-pp-dp')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('summary')
    ap.add_argument('truth')
    ap.add_argument('--cf-summary')
    ap.add_argument('--quiet-ok', action='store_true')
    a = ap.parse_args()
    S = json.load(open(a.summary))
    T = json.load(open(a.truth))
    out = []

    def rep(status, what, detail=''):
        out.append((status, what, detail))

    steps = T['step_ms']
    steady = steps[1:] if len(steps) > 1 else steps
    med_step = sorted(steady)[len(steady) // 2] if steady else None
    host_of_rank = {}
    for h in T['hosts']:
        for r in h['ranks']:
            host_of_rank[r] = h['name']

    probs = S.get('problems')
    if probs is None:
        rep('missed', 'contract', '`problems` is null/absent (docs/summary-contract.md: a list, [] when healthy)')
        probs = []
    used = set()
    faults = T['faults']
    fatal = [f for f in faults if f['class'] in ('crash', 'hang')]

    def close(x, y, rel, floor):
        return x is not None and y is not None and abs(x - y) <= max(rel * abs(y), floor)

    for f in faults:
        cls = f['class']
        if cls in ('crash', 'hang'):
            r = f['rank']
            it = f['onset']
            rows = [d for d in (S.get('desync') or []) if r in (d.get('missing_ranks') or [])]
            if not rows:
                rep('missed', '%s rank %d desync' % (cls, r), 'no desync row names rank %d missing (desync=%s)' % (r, json.dumps(S.get('desync'))[:300]))
            else:
                d0 = rows[0]
                rep('found', '%s rank %d desync' % (cls, r), 'communicator %s missing %s' % (d0.get('communicator'), d0.get('missing_ranks')))
                its = [d.get('iteration') for d in rows]
                if any(x is not None and abs(x - it) <= 1 for x in its):
                    rep('ok', '%s rank %d iteration' % (cls, r), 'desync iteration %s, truth %d' % (its[:3], it))
                else:
                    rep('wrong', '%s rank %d iteration' % (cls, r), 'desync iteration %s, truth %d' % (its[:3], it))
                if any('crashed_ranks' in d for d in rows):
                    cr = set(x for d in rows for x in (d.get('crashed_ranks') or []))
                    if cls == 'crash' and r not in cr:
                        rep('wrong', 'crash rank %d crashed_ranks' % r, 'crashed_ranks %s lacks the dead rank' % sorted(cr))
                    elif cls == 'hang' and r in cr:
                        rep('wrong', 'hang rank %d crashed_ranks' % r, 'a hung rank (capture ran on) listed as crashed')
                    else:
                        rep('ok', '%s rank %d crashed_ranks' % (cls, r), str(sorted(cr)))
                bl = set(x for d in rows for x in (d.get('blocked_ranks') or []))
                if r in bl:
                    rep('wrong', '%s rank %d blocked' % (cls, r), 'the stopped rank is listed as blocked')
            cand = [i for i, p in enumerate(probs) if p.get('cause') == cls and r in (p.get('ranks') or []) and i not in used]
            if not cand:
                rep('missed', '%s rank %d problem' % (cls, r), 'no problem with cause %s naming rank %d' % (cls, r))
            else:
                i = cand[0]
                used.add(i)
                p = probs[i]
                ok = sorted(p.get('ranks') or []) == [r] and r not in (p.get('blocked_ranks') or [])
                rep('found' if ok else 'wrong', '%s rank %d problem' % (cls, r), 'ranks %s blocked %d' % (p.get('ranks'), len(p.get('blocked_ranks') or [])))
                on = p.get('onset_iteration')
                rep('ok' if (on is not None and abs(on - it) <= 1) else 'wrong', '%s rank %d onset' % (cls, r), 'reported %s, truth %d' % (on, it))
            continue
        # stragglers and links
        want_cause = f['cause']
        kind = f['place']['kind']
        label = '%s %s' % (cls, f['place'].get('name') or ','.join(f['place'].get('names') or []) or 'every_rank')

        def place_ok(p):
            pl = p.get('place') or {}
            pk = pl.get('kind')
            if kind == 'rank':
                return pk == 'rank' and sorted(p.get('ranks') or []) == f['ranks']
            if kind == 'host':
                return pk == 'host' and pl.get('name') == f['place']['name'] and sorted(p.get('ranks') or []) == sorted(f['ranks'])
            if kind == 'hosts':
                got = set(p.get('hosts') or ([pl.get('name')] if pl.get('name') else []) or pl.get('names') or [])
                need = set(f['place']['names'])
                allowed = need | set(f.get('hosts_identifiable') or [])
                return pk in ('host', 'hosts') and need <= got <= allowed
            if kind == 'every_rank':
                return pk == 'every_rank'
            return False
        cand = [i for i, p in enumerate(probs) if i not in used and p.get('cause') == want_cause and place_ok(p)]
        tc0 = f.get('cost_ms_per_step')
        if tc0 is not None and abs(tc0) <= max(0.5, 0.01 * (med_step or 0)):
            # absorbed (e.g. a host delay shorter than the queued GPU work): nothing to find; a
            # problem reported there must not claim a cost
            bad_c = [i for i in cand if abs(probs[i].get('cost_ms_per_step') or 0) > max(0.5, 0.02 * (med_step or 0))]
            for i in cand:
                used.add(i)
            rep('false' if bad_c else 'ok', label + ' absorbed', 'true cost %.2f ms/step (absorbed by the launch queue)%s' % (
                tc0, '; reported %s' % [probs[i].get('cost_ms_per_step') for i in bad_c] if bad_c else ''))
            continue
        if not cand:
            near = [(p.get('cause'), (p.get('place') or {}), p.get('ranks', [])[:8]) for p in probs]
            rep('missed', label, 'no problem cause=%s at that place; problems: %s; stragglers: %s; slow_links: %s' % (
                want_cause, json.dumps(near)[:300],
                json.dumps([(x.get('rank'), x.get('cause')) for x in S.get('stragglers') or []])[:200],
                json.dumps([x.get('hosts') for x in S.get('slow_links') or []])[:200]))
            continue
        i = cand[0]
        used.add(i)
        p = probs[i]
        rep('found', label, 'cause %s place %s' % (p.get('cause'), json.dumps(p.get('place'))))
        on = p.get('onset_iteration')
        rep('ok' if (on is not None and abs(on - f['onset']) <= 1) else 'wrong', label + ' onset', 'reported %s, truth %d' % (on, f['onset']))
        tc = f.get('cost_ms_per_step')
        c = p.get('cost_ms_per_step')
        rel = 0.2 if cls == 'stall' else 0.1
        floor = 0.01 * (med_step or 0)
        good = close(c, tc, rel, floor)
        rep('ok' if good else 'wrong', label + ' cost', 'reported %s ms/step, truth %.2f (tolerance %.0f%% or %.2f ms)' % (
            ('%.2f' % c) if c is not None else None, tc, rel * 100, floor))
        if cls == 'stall':
            per = p.get('period_iterations')
            rep('ok' if per == f['period_iterations'] else 'wrong', label + ' period', 'reported %s, truth %d' % (per, f['period_iterations']))
        if 'step_ms_counterfactual' in T and T.get('step_ms_counterfactual') and len([g for g in faults if g['class'] not in ('crash', 'hang')]) == 1:
            sw = p.get('step_ms_without')
            cfs = T['step_ms_counterfactual'][max(1, f['onset']):]
            if cfs and sw is not None:
                cfm = sum(cfs) / len(cfs)
                rep('ok' if close(sw, cfm, 0.0, max(0.1 * abs(tc), floor)) else 'wrong', label + ' step_without',
                    'reported %.2f, counterfactual %.2f' % (sw, cfm))
    for i, p in enumerate(probs):
        if i not in used:
            rep('false', 'problem %s' % p.get('cause'), 'place %s ranks %s cost %s' % (json.dumps(p.get('place')), (p.get('ranks') or [])[:8], p.get('cost_ms_per_step')))
    if not faults:
        for key in ('stragglers', 'slow_links', 'desync'):
            v = S.get(key) or []
            if v:
                rep('false', 'healthy %s' % key, json.dumps(v)[:300])
            else:
                rep('ok', 'healthy %s' % key, '[]')
    elif not fatal and S.get('desync'):
        rep('false', 'desync', json.dumps(S['desync'])[:300])

    # layout
    lay = T['layout']
    sl = S.get('layout')
    degenerate = lay['pp'] == 1 or lay['dp'] == 1
    if sl is None:
        if lay['order'] in MEGATRON_ORDERS or degenerate:
            rep('missed', 'layout', 'null; truth %dx%dx%d %s' % (lay['tp'], lay['pp'], lay['dp'], lay['order']))
        else:
            rep('ok', 'layout', 'null for the non-Megatron order %s (the README says so)' % lay['order'])
    else:
        same = (sl.get('tp'), sl.get('pp'), sl.get('dp')) == (lay['tp'], lay['pp'], lay['dp'])
        order_ok = sl.get('order') == lay['order'] or degenerate or (lay['tp'] == 1 and {sl.get('order'), lay['order']} <= {'tp-dp-pp', 'dp-tp-pp'})
        rep('ok' if (same and order_ok) else 'wrong', 'layout', 'reported %sx%sx%s %s, truth %dx%dx%d %s' % (
            sl.get('tp'), sl.get('pp'), sl.get('dp'), sl.get('order'), lay['tp'], lay['pp'], lay['dp'], lay['order']))
    # pipeline
    tp_ = T.get('pipeline')
    if tp_ and not fatal:
        sp = S.get('pipeline')
        if not sp:
            rep('missed', 'pipeline', 'null; truth PP=%d m=%d v=%d %s' % (tp_['pp'], tp_['microbatches'], tp_['virtual_stages'], tp_['schedule']))
        else:
            sch = (sp.get('schedule') or '').lower()
            want = tp_['schedule']
            if want == 'interleaved':
                oks = sch.startswith('interleaved')
            elif tp_['microbatches'] <= tp_['pp']:
                oks = sch in ('1f1b', 'gpipe')
            else:
                oks = sch == want
            rep('ok' if oks else 'wrong', 'pipeline schedule', 'reported %s, truth %s' % (sp.get('schedule'), want))
            rep('ok' if sp.get('microbatches') == tp_['microbatches'] else 'wrong', 'pipeline microbatches', 'reported %s, truth %d' % (sp.get('microbatches'), tp_['microbatches']))
            rep('ok' if sp.get('virtual_stages') == tp_['virtual_stages'] else 'wrong', 'pipeline virtual_stages', 'reported %s, truth %d' % (sp.get('virtual_stages'), tp_['virtual_stages']))
            bm, tb = sp.get('bubble_measured'), tp_['bubble_measured']
            rep('ok' if close(bm, tb, 0.10, 0.02) else 'wrong', 'pipeline bubble', 'reported %s, truth %.4f (theory %.4f)' % (bm, tb, tp_['bubble_theoretical']))
    # step time
    sm = (S.get('step_ms') or {}).get('median')
    if med_step and not fatal:
        rep('ok' if close(sm, med_step, 0.03, 0.0) else 'wrong', 'step median', 'reported %s, truth %.2f' % (sm, med_step))
    # counterfactual summary: the same run without the faults must be healthy
    if a.cf_summary:
        C = json.load(open(a.cf_summary))
        cp = C.get('problems')
        if cp is None:
            cp = []
        bad = list(cp) + [('straggler', x) for x in C.get('stragglers') or []] + [('slow_link', x) for x in C.get('slow_links') or []]
        if bad:
            rep('false', 'counterfactual', 'the run without faults: %s' % json.dumps(bad)[:300])
        else:
            rep('ok', 'counterfactual', 'healthy')
        cm = (C.get('step_ms') or {}).get('median')
        cf_steps = T.get('step_ms_counterfactual') or []
        if cm and cf_steps:
            cmed = sorted(cf_steps[1:])[len(cf_steps[1:]) // 2]
            rep('ok' if close(cm, cmed, 0.03, 0.0) else 'wrong', 'counterfactual step median', 'reported %s, truth %.2f' % (cm, cmed))
    bad = 0
    for st, what, det in out:
        if st in ('missed', 'false', 'wrong'):
            bad += 1
        if a.quiet_ok and st in ('ok', 'found', 'info'):
            continue
        print('%-6s %-34s %s' % (st, what, det))
    print('RESULT %s (%d checks, %d failed)' % ('PASS' if bad == 0 else 'FAIL', len(out), bad))
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
