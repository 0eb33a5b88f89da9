// Issue 14's rule, enumerated: everything an Argo CD user writes (Argo CD's CRD schemas, the
// documented argocd-cm keys, sync and compare options, annotations, hook types, finalizers and
// Secret keys, kept in fixtures/argocd-surface.json with the commit of github.com/argoproj/argo-cd
// they come from) is honoured, or named in the UnsupportedFieldWarning condition. A name with no
// rule fails here; so does a warned one the condition does not name.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { AppProject, Application } from '../../src/api/index.ts';
import type { FieldRule } from '../../src/controller/field-support.ts';
import {
  ANNOTATION_RULES,
  APPLICATION_RULES,
  APPPROJECT_RULES,
  ARGOCD_CM_RULES,
  CLUSTER_SECRET_RULES,
  COMPARE_OPTION_RULES,
  FINALIZER_RULES,
  HOOK_RULES,
  REPOSITORY_SECRET_RULES,
  SYNC_OPTION_RULES,
  ruleFor,
} from '../../src/controller/field-support.ts';
import type { UnhonouredInput } from '../../src/controller/unhonoured.ts';
import { repositorySecretsOf, unhonouredCondition, unhonouredFields } from '../../src/controller/unhonoured.ts';
import { parseRepositorySecret } from '../../src/api/repository.ts';
import { accessFor, EMPTY_REPOSITORY_STATE, RepositoryRefused } from '../../src/repository/access.ts';
import { PROOFS, SOURCE_PREFIX } from './field-proofs.ts';

const surface = JSON.parse(readFileSync(new URL('./fixtures/argocd-surface.json', import.meta.url), 'utf8')) as Record<
  string,
  string[]
> & { source: { repository: string; commit: string } };

const TABLES: Array<[string, readonly FieldRule[]]> = [
  ['application', APPLICATION_RULES],
  ['appproject', APPPROJECT_RULES],
  ['argocdCm', ARGOCD_CM_RULES],
  ['syncOptions', SYNC_OPTION_RULES],
  ['compareOptions', COMPARE_OPTION_RULES],
  ['annotations', ANNOTATION_RULES],
  ['hookTypes', HOOK_RULES],
  ['hookDeletePolicies', HOOK_RULES],
  ['finalizers', FINALIZER_RULES],
  ['clusterSecret', CLUSTER_SECRET_RULES],
  ['repositorySecret', REPOSITORY_SECRET_RULES],
];

test('the fixture names its source: a commit of Argo CD', () => {
  assert.equal(surface.source.repository, 'github.com/argoproj/argo-cd');
  assert.match(surface.source.commit, /^[0-9a-f]{40}$/);
  for (const [key] of TABLES) assert.ok((surface[key] ?? []).length > 0, `fixture ${key} is empty`);
});

test('every name Argo CD defines has a rule: honoured, refused, warned, or read elsewhere', () => {
  const missing: string[] = [];
  for (const [key, rules] of TABLES)
    for (const name of surface[key] ?? []) if (!ruleFor(rules, name)) missing.push(`${key}: ${name}`);
  assert.deepEqual(missing, []);
});

/** Each rule table once, by its key in field-proofs.ts; `paths`: its names are dotted paths. */
const PROOF_TABLES: Array<[string, readonly FieldRule[], boolean]> = [
  ['application', APPLICATION_RULES, true],
  ['appproject', APPPROJECT_RULES, true],
  ['argocdCm', ARGOCD_CM_RULES, false],
  ['syncOptions', SYNC_OPTION_RULES, false],
  ['compareOptions', COMPARE_OPTION_RULES, false],
  ['annotations', ANNOTATION_RULES, false],
  ['hooks', HOOK_RULES, false],
  ['finalizers', FINALIZER_RULES, false],
  ['clusterSecret', CLUSTER_SECRET_RULES, true],
  ['repositorySecret', REPOSITORY_SECRET_RULES, true],
];
const ROOT = new URL('../../', import.meta.url);

/** What a proof file may mention for `pattern`: the name (placeholders, `.**` and `[]` taken off), a path's last segment. */
function mentionsOf(pattern: string, paths: boolean): string[] {
  const name = pattern
    .replace(/\.\*\*$/, '')
    .replace(/\.<[^>]+>/g, '')
    .replace(/\[\]/g, '');
  return paths ? [name, name.split('.').at(-1) as string] : [name];
}

test('every honoured name names the behaviour tests that prove it, and each names the field', () => {
  const wrong: string[] = [];
  const used = new Set<string>();
  for (const [table, rules, paths] of PROOF_TABLES) {
    for (const rule of rules) {
      if (rule.support !== 'honoured') continue;
      const key = rule.pattern.replace(SOURCE_PREFIX, 'SOURCE.');
      used.add(`${table} ${key}`);
      const proof = PROOFS[table]?.[key];
      if (!proof || proof.files.length === 0) {
        wrong.push(`${table} ${rule.pattern}: honoured without a proof`);
        continue;
      }
      const mentions = [...mentionsOf(key.replace(/^SOURCE\./, 'spec.source.'), paths), ...(proof.mentions ?? [])];
      for (const file of proof.files) {
        const url = new URL(file, ROOT);
        if (!/\.test\.ts$/.test(file) || !existsSync(url)) {
          wrong.push(`${table} ${rule.pattern}: ${file} is no test file`);
          continue;
        }
        const text = readFileSync(url, 'utf8');
        if (!mentions.some((m) => text.includes(m)))
          wrong.push(`${table} ${rule.pattern}: ${file} mentions none of ${mentions.join(', ')}`);
      }
    }
  }
  // A proof left for a name that is no longer honoured is a claim nothing checks.
  for (const [table, entries] of Object.entries(PROOFS))
    for (const key of Object.keys(entries))
      if (!used.has(`${table} ${key}`)) wrong.push(`${table} ${key}: a proof for no honoured rule`);
  assert.deepEqual(wrong, []);
});

const baseApp = (): Application =>
  ({
    metadata: { name: 'guestbook', namespace: 'argocd' },
    spec: { project: 'default', destination: { server: 'https://kubernetes.default.svc', namespace: 'g' } },
  }) as Application;
const baseProject = (): AppProject => ({ metadata: { name: 'default' }, spec: {} }) as AppProject;

/** An object with `path` (CRD-style, arrays as []) set to something. */
function withPath(root: Record<string, unknown>, path: string, value: unknown): void {
  const steps = path.split('.');
  let cur: Record<string, unknown> = root;
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i] as string;
    const array = step.endsWith('[]');
    const key = array ? step.slice(0, -2) : step;
    const last = i === steps.length - 1;
    if (array) {
      const list = (cur[key] as unknown[] | undefined) ?? [];
      cur[key] = list;
      if (last) list.push(value);
      else {
        if (list.length === 0) list.push({});
        cur = list[0] as Record<string, unknown>;
      }
    } else if (last) cur[key] = value;
    else {
      cur[key] = (cur[key] as Record<string, unknown> | undefined) ?? {};
      cur = cur[key] as Record<string, unknown>;
    }
  }
}

function inputFor(key: string, name: string): UnhonouredInput {
  const app = baseApp();
  const project = baseProject();
  const input: UnhonouredInput = { app, project };
  switch (key) {
    case 'application':
      withPath(app as unknown as Record<string, unknown>, name, 'x');
      break;
    case 'appproject':
      withPath(project as unknown as Record<string, unknown>, name, 'x');
      break;
    case 'argocdCm':
      input.settings = { [name.replace(/<[^>]+>/g, 'x')]: 'x' };
      break;
    case 'syncOptions':
      app.spec.syncPolicy = { syncOptions: [name] };
      break;
    case 'compareOptions':
      app.metadata.annotations = { 'argocd.argoproj.io/compare-options': name };
      break;
    case 'annotations':
      app.metadata.annotations = { [name]: 'x' };
      break;
    case 'hookTypes':
    case 'hookDeletePolicies':
      input.objects = [{ metadata: { annotations: { 'argocd.argoproj.io/hook': name } } }];
      break;
    case 'finalizers':
      app.metadata.finalizers = [name];
      break;
    case 'repositorySecret':
      input.repositorySecrets = [{ secret: 'argocd/repo', keys: [name.slice('data.'.length)] }];
      break;
    case 'clusterSecret':
      input.clusterSecret = name.startsWith('data.config.')
        ? { data: {}, config: { [name.slice('data.config.'.length)]: 'x' } }
        : { data: { [name.slice('data.'.length)]: 'x' }, config: {} };
      break;
  }
  return input;
}

test('each warned name, set alone, is named in the condition; each honoured one is not', () => {
  const wrong: string[] = [];
  for (const [key, rules] of TABLES) {
    for (const name of surface[key] ?? []) {
      const rule = ruleFor(rules, name);
      if (!rule) continue;
      const fields = unhonouredFields(inputFor(key, name));
      const named = fields.some((f) => f.includes(rule.pattern.replace(/\.\*\*$/, '')));
      if (rule.support === 'warned' && !named) wrong.push(`${key} ${name}: warned but not named`);
      if (rule.support !== 'warned' && named)
        wrong.push(`${key} ${name}: ${rule.support} but named: ${fields.join('; ')}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('the condition: one UnsupportedFieldWarning listing each, with why', () => {
  const app = baseApp();
  app.spec.syncPolicy = { syncOptions: ['ServerSideApply=false', 'Nonsense=true'] };
  // Argo CD's server sets the hydrator's annotations on every refresh: not a warning.
  app.metadata.annotations = { 'argocd.argoproj.io/hydrate': 'normal', 'argocd.argoproj.io/hydrate-timestamp': 'x' };
  (app.spec as { source?: Record<string, unknown> }).source = {
    repoURL: 'https://git.example/x',
    path: '.',
    ref: 'values',
  };
  const c = unhonouredCondition({
    app,
    project: baseProject(),
    settings: { 'application.allowedNodeLabels': 'zone', url: 'https://argo' },
  });
  assert.equal(c?.type, 'UnsupportedFieldWarning');
  assert.equal(
    c?.message,
    'impersync does not act on: Application spec.source.ref (a ref has meaning only among spec.sources); sync option Nonsense=true (not an option Argo CD defines); argocd-cm application.allowedNodeLabels (the resource tree has no hosts: they need every Node and Pod read as the controller)',
  );
  assert.equal(unhonouredCondition({ app: baseApp(), project: baseProject() }), undefined);
});

const repositorySecret = (name: string, data: Record<string, string>) =>
  parseRepositorySecret({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'argocd', labels: { 'argocd.argoproj.io/secret-type': 'repository' } },
    stringData: { url: 'https://git.example.com/org/app', ...data },
  });

test('each refused repository Secret field, set alone, refuses the repository naming the field', () => {
  const wrong: string[] = [];
  for (const name of surface['repositorySecret'] ?? []) {
    if (ruleFor(REPOSITORY_SECRET_RULES, name)?.support !== 'refused') continue;
    const field = name.slice('data.'.length);
    const state = { ...EMPTY_REPOSITORY_STATE, configs: [repositorySecret('repo', { [field]: 'x' })] };
    try {
      accessFor(state, 'https://git.example.com/org/app', 'default');
      wrong.push(`${field}: not refused`);
    } catch (err) {
      if (!(err instanceof RepositoryRefused) || !err.message.includes(`'${field}'`))
        wrong.push(`${field}: ${(err as Error).message}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test("the repository Secrets an Application's sources read: none warned, a shallow depth refused", () => {
  const state = {
    ...EMPTY_REPOSITORY_STATE,
    configs: [
      repositorySecret('shallow', { depth: '1', password: 'p' }),
      repositorySecret('full', { url: 'https://git.example.com/org/other', depth: '0', password: 'p' }),
    ],
  };
  const sources = [
    { repoURL: 'https://git.example.com/org/app.git', path: '.' },
    { repoURL: 'https://git.example.com/org/other', path: '.' },
  ];
  const repositorySecrets = repositorySecretsOf(state, sources, baseProject());
  assert.deepEqual(
    repositorySecrets.map((r) => r.secret),
    ['argocd/shallow', 'argocd/full'],
  );
  // No repository Secret key is warned any more: `depth` above 0 is refused when the render uses it.
  assert.deepEqual(unhonouredFields({ app: baseApp(), project: baseProject(), repositorySecrets }), []);
  assert.throws(
    () => accessFor(state, 'https://git.example.com/org/app.git', 'default'),
    (err: unknown) =>
      err instanceof RepositoryRefused && /argocd\/shallow: field 'depth' \(shallow clones\)/.test(err.message),
  );
  assert.doesNotThrow(
    () => accessFor(state, 'https://git.example.com/org/other', 'default'),
    'depth 0 is a full clone',
  );
});
