#!/usr/bin/env python3
"""Validate every response (and 2xx request body) of the golden examples against docs/api/openapi.yaml.

The golden examples are what the server answers (the contract tests check that); this checks that the OpenAPI
document describes those same answers, so the docs cannot drift from the server. Run by .ci/run.
"""
import copy, glob, json, os, re, sys
import yaml
from jsonschema import Draft202012Validator, FormatChecker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = yaml.safe_load(open(os.path.join(ROOT, 'docs/api/openapi.yaml')))
EXDIR = os.path.join(ROOT, 'docs/api/examples')
PLACEHOLDERS = {
    '<time>': '2026-11-22T00:32:08.332Z',
    '<uuid>': '3f2504e0-4f89-41d3-9a0c-0305e82c3301',
    '<date>': '0123456789abcdef.3f2504e0-4f89-41d3-9a0c-0305e82c3301.17',
    '<token>': 'dGhpcyBpcyBhIHRva2VuIGZvciB0ZXN0cw',
}

def subst(v):
    if isinstance(v, str):
        for k, r in PLACEHOLDERS.items():
            v = v.replace(k, r)
        return v
    if isinstance(v, list):
        return [subst(x) for x in v]
    if isinstance(v, dict):
        return {k: subst(x) for k, x in v.items()}
    return v

def deref(obj):
    while isinstance(obj, dict) and '$ref' in obj:
        node = SPEC
        for part in obj['$ref'][2:].split('/'):
            node = node[part]
        obj = node
    return obj

def validate(schema, instance):
    root = {'$schema': 'https://json-schema.org/draft/2020-12/schema', 'components': SPEC['components'],
            'allOf': [schema]}
    v = Draft202012Validator(root, format_checker=FormatChecker())
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in v.iter_errors(instance)]

TEMPLATES = []
for p in SPEC['paths']:
    rx = '^' + re.sub(r'\\\{[^}]+\\\}', '[^/]+', re.escape(p)) + '$'
    TEMPLATES.append((p, re.compile(rx)))

def match_path(path):
    path = path.split('?', 1)[0]
    hits = [p for p, rx in TEMPLATES if rx.match(path)]
    # prefer the template with the most literal characters
    hits.sort(key=lambda p: -len(re.sub(r'\{[^}]+\}', '', p)))
    return hits[0] if hits else None

total = checked = 0
failures = []
notes = []
for f in sorted(glob.glob(f'{EXDIR}/*.json')):
    doc = json.load(open(f))
    name = f.rsplit('/', 1)[1]
    for i, step in enumerate(doc['steps']):
        total += 1
        req, res = step['request'], subst(step['response'])
        where = f"{name} step {i} {req['method']} {req['path']} -> {res['status']}"
        status = str(res['status'])
        p = match_path(req['path'])
        if p is None:
            if status == '404':
                errs = validate(deref(SPEC['components']['responses']['NotFound'])['content']['application/problem+json']['schema'], res['body'])
                notes.append(f'{where}: no such path in the spec (unknown path: checked against NotFound)')
                checked += 1
                if errs: failures.append((where, errs))
                continue
            failures.append((where, ['path not in spec']))
            continue
        item = SPEC['paths'][p]
        # HEAD answers what GET answers, without a body (every GET path takes HEAD; protocol §2).
        op = item.get(req['method'].lower()) or (item.get('get') if req['method'] == 'HEAD' else None)
        if op is None:
            if status == '405':
                resp = deref(SPEC['components']['responses']['MethodNotAllowed'])
                notes.append(f'{where}: method not an operation of {p} (405 checked against MethodNotAllowed)')
            else:
                failures.append((where, [f'no {req["method"]} operation on {p}']))
                continue
        else:
            if op.get('x-status') == 'planned':
                notes.append(f'{where}: operation {op["operationId"]} is marked x-status: planned (checked anyway)')
            resp = op['responses'].get(status) or op['responses'].get('default')
            if resp is None:
                failures.append((where, [f'status {status} not documented for {op["operationId"]} ({p})']))
                continue
            resp = deref(resp)
        checked += 1
        errs = []
        content = resp.get('content')
        body = res.get('body')
        if body is None:
            if content and status not in ('204', '304') and req['method'] != 'HEAD':
                errs.append('spec has a body, example has none')
        else:
            if not content:
                errs.append('example has a body, spec has none')
            elif isinstance(body, str) and re.fullmatch(r'<\d+ bytes>', body):
                # A binary answer (media), written by its size in the golden file.
                if not any('json' not in m for m in content):
                    errs.append(f'binary answer, but the spec only has {list(content)}')
            else:
                media = 'application/problem+json' if int(status) >= 400 else 'application/json'
                if media not in content:
                    errs.append(f'no {media} content in spec ({list(content)})')
                else:
                    errs += validate(content[media]['schema'], body)
        for h, val in (res.get('headers') or {}).items():
            hs = (resp.get('headers') or {}).get(h)
            if hs is None:
                errs.append(f'header {h} not declared in spec')
            else:
                errs += [f'header {h}: {e}' for e in validate(deref(hs)['schema'], val)]
        # request bodies of successful writes
        if op is not None and 'body' in req and not req.get('rawBody') and 200 <= res['status'] < 300 and 'requestBody' in op:
            rs = deref(op['requestBody'])['content']['application/json']['schema']
            errs += [f'request body: {e}' for e in validate(rs, subst(req['body']))]
        if errs:
            failures.append((where, errs))

print(f'{total} steps, {checked} responses checked, {len(failures)} failing')
for n in notes:
    print('note:', n)
for w, errs in failures:
    print('FAIL', w)
    for e in errs:
        print('    ', e)
sys.exit(1 if failures else 0)
