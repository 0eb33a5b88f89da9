// Argo CD's build environment: `$ARGOCD_APP_*` in helm parameter values and value file paths, and in
// kustomize images, commonLabels and (with commonAnnotationsEnvsubst) commonAnnotations, substituted
// as Go's os.Expand does. The table's answers were printed by os.Expand itself (Go 1.25).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { ApplicationSource } from '../../src/api/application.ts';
import { buildEnv, envsubst } from '../../src/source/build-env.ts';
import { SourceError, SourceRenderer, type RenderInput } from '../../src/source/index.ts';
import { TestRepo } from '../support/git.ts';
import { toolsDir } from './tools.ts';

test('envsubst reads `$` as Go os.Expand does: unknown names are "", $$ is $, bad braces are dropped', () => {
  const env = { ARGOCD_APP_NAME: 'guestbook', ARGOCD_APP_REVISION: '0123456789abcdef' };
  const goSays: Array<[string, string]> = [
    ['', ''],
    ['plain', 'plain'],
    ['$', '$'],
    ['a$', 'a$'],
    ['$$', '$'],
    ['$$$', '$$'],
    ['$ARGOCD_APP_NAME', 'guestbook'],
    ['${ARGOCD_APP_NAME}', 'guestbook'],
    ['x-$ARGOCD_APP_NAME-y', 'x-guestbook-y'],
    ['$ARGOCD_APP_NAME.yaml', 'guestbook.yaml'],
    ['$UNKNOWN/x', '/x'],
    ['${}', ''],
    ['${', ''],
    ['${ARGOCD_APP_NAME', 'ARGOCD_APP_NAME'],
    ['a${}b', 'ab'],
    ['a${b', 'ab'],
    ['$1', ''],
    ['${1}', ''],
    ['${12}', ''],
    ['$-x', 'x'],
    ['$@', ''],
    ['${$}', '$'],
    ['$ {x}', '$ {x}'],
    ['$/x', '$/x'],
    ['pa$$word', 'pa$word'],
    ['price: $5', 'price: '],
    ['$ARGOCD_APP_REVISION_x', ''],
    ['${ARGOCD_APP_REVISION}_x', '0123456789abcdef_x'],
    ['é$ARGOCD_APP_NAMEé', 'éguestbooké'],
    ['$constructor', ''],
    ['${toString}', ''],
    ['$__proto__', ''],
    ['${a}b}', 'b}'],
    ['$}', '$}'],
    ['${ARGOCD_APP_NAME}}', 'guestbook}'],
  ];
  for (const [text, expected] of goSays) assert.equal(envsubst(text, env), expected, JSON.stringify(text));
  assert.equal(envsubst('$ARGOCD_APP_NAME', undefined), '$ARGOCD_APP_NAME', 'no environment: nothing substituted');
});

/** Go's os.Expand as written (rescanning for `}` and slicing each time): the reference envsubst is held to. */
function goExpand(s: string, env: Record<string, string>): string {
  const special = (c: string | undefined) => c !== undefined && '*#$@!?-0123456789'.includes(c);
  const shellName = (r: string): [string, number] => {
    if (r[0] === '{') {
      if (r.length > 2 && special(r[1]) && r[2] === '}') return [r.slice(1, 2), 3];
      for (let i = 1; i < r.length; i++) if (r[i] === '}') return i === 1 ? ['', 2] : [r.slice(1, i), i + 1];
      return ['', 1];
    }
    if (special(r[0])) return [r.slice(0, 1), 1];
    let i = 0;
    while (i < r.length && /[A-Za-z0-9_]/.test(r[i] ?? '')) i++;
    return [r.slice(0, i), i];
  };
  let buf: string | undefined;
  let i = 0;
  for (let j = 0; j < s.length; j++) {
    if (s[j] === '$' && j + 1 < s.length) {
      buf = (buf ?? '') + s.slice(i, j);
      const [name, w] = shellName(s.slice(j + 1));
      if (name === '' && w > 0) {
        // dropped
      } else if (name === '') buf += s[j];
      else buf += name === '$' ? '$' : (env[name] ?? '');
      j += w;
      i = j + 1;
    }
  }
  return buf === undefined ? s : buf + s.slice(i);
}

test('property: envsubst agrees with a transcription of Go os.Expand on any text of $, braces and names', () => {
  const env = { A: 'x', ARGOCD_APP_NAME: 'guestbook', _1: 'u' };
  const text = fc.string({
    unit: fc.constantFrom('$', '{', '}', 'A', '_', '1', '-', '/', 'é', ' ', 'ARGOCD_APP_NAME'),
  });
  fc.assert(
    fc.property(text, (s) => envsubst(s, env) === goExpand(s, env)),
    { numRuns: 3000 },
  );
});

test("the build environment has Argo CD's names and values", () => {
  assert.deepEqual(
    buildEnv({
      appName: 'shop',
      destinationNamespace: 'team-b',
      project: 'tenants',
      revision: '0123456789abcdef0123456789abcdef01234567',
      repoURL: 'https://git.example/shop.git',
      path: 'chart',
      targetRevision: 'main',
    }),
    {
      ARGOCD_APP_NAME: 'shop',
      ARGOCD_APP_NAMESPACE: 'team-b',
      ARGOCD_APP_PROJECT_NAME: 'tenants',
      ARGOCD_APP_REVISION: '0123456789abcdef0123456789abcdef01234567',
      ARGOCD_APP_REVISION_SHORT: '0123456',
      ARGOCD_APP_REVISION_SHORT_8: '01234567',
      ARGOCD_APP_SOURCE_REPO_URL: 'https://git.example/shop.git',
      ARGOCD_APP_SOURCE_PATH: 'chart',
      ARGOCD_APP_SOURCE_TARGET_REVISION: 'main',
    },
  );
});

const FILES: Record<string, string> = {
  'chart/Chart.yaml': 'apiVersion: v2\nname: demo\nversion: 0.1.0\n',
  'chart/values.yaml': 'color: blue\nwho: nobody\n',
  'chart/values-shop.yaml': 'color: green\n',
  'chart/templates/cm.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  color: {{ .Values.color | quote }}\n  who: {{ .Values.who | quote }}\n  price: {{ .Values.price | quote }}\n',
  'kbase/kustomization.yaml': 'resources: [deploy.yaml]\n',
  'kown/kustomization.yaml':
    'resources: [../kbase]\ncommonLabels: {owner: base}\ncommonAnnotations: {source: base}\nimages:\n- {name: nginx, newTag: base}\n',
  'kbase/deploy.yaml':
    'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx:1.25}]\n',
};

describe('build variables in a render', () => {
  let repo: TestRepo;
  let head: string;
  let cacheDir: string;
  let renderer: SourceRenderer;
  const app = (source: Record<string, unknown>): RenderInput => ({
    source: { repoURL: repo.fileURL, targetRevision: 'main', ...source } as ApplicationSource,
    appName: 'shop',
    destinationNamespace: 'team-b',
    project: 'tenants',
  });

  before(async () => {
    repo = await TestRepo.create();
    head = await repo.commit(FILES, 'fixtures');
    cacheDir = await mkdtemp(path.join(os.tmpdir(), 'impersync-build-env-'));
    renderer = new SourceRenderer({ allowLocalRepositories: true, cacheDir, toolsDir: toolsDir() });
  });
  after(async () => {
    await repo?.remove();
    if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
  });

  test('helm: parameter values and value file paths are substituted; names and inline values are not', async () => {
    const r = await renderer.render(
      app({
        path: 'chart',
        helm: {
          valueFiles: ['values-$ARGOCD_APP_NAME.yaml'],
          values: 'price: $ARGOCD_APP_NAME\n',
          parameters: [
            { name: 'who', value: '${ARGOCD_APP_PROJECT_NAME}/$ARGOCD_APP_NAMESPACE@$ARGOCD_APP_REVISION_SHORT' },
          ],
        },
      }),
    );
    const data = (r.objects[0]?.object as { data?: unknown }).data;
    assert.deepEqual(data, {
      color: 'green',
      who: `tenants/team-b@${head.slice(0, 7)}`,
      price: '$ARGOCD_APP_NAME',
    });
  });

  test('an Application outside the controller namespace: ARGOCD_APP_NAME is <namespace>_<name>, the release name is not', async () => {
    const r = await renderer.render({
      ...app({ path: 'chart', helm: { parameters: [{ name: 'who', value: '$ARGOCD_APP_NAME' }] } }),
      instanceName: 'team-apps_shop',
    });
    const data = (r.objects[0]?.object as unknown as { data: Record<string, string> }).data;
    assert.equal(data['who'], 'team-apps_shop');
    // Rendered at all: helm refuses '_' in a release name, so the release name was 'shop'.
  });

  test('helm: `$$` keeps a dollar and an unknown variable is empty, as in Argo CD', async () => {
    const r = await renderer.render(
      app({
        path: 'chart',
        helm: { parameters: [{ name: 'who', value: 'pa$$word-$NOT_SET-x', forceString: true }] },
      }),
    );
    assert.equal((r.objects[0]?.object as unknown as { data: Record<string, string> }).data['who'], 'pa$word--x');
  });

  test('attack: a variable cannot carry a value file out of the repository', async () => {
    await assert.rejects(
      renderer.render(app({ path: 'chart', helm: { valueFiles: ['$ARGOCD_APP_SOURCE_PATH/../../../etc/passwd'] } })),
      (err: unknown) =>
        err instanceof SourceError &&
        err.reason === 'InvalidSource' &&
        /helm value file '\$ARGOCD_APP_SOURCE_PATH\/\.\.\/\.\.\/\.\.\/etc\/passwd' of 'chart' is outside the repository/.test(
          err.message,
        ),
    );
    await assert.rejects(
      renderer.render(app({ path: 'chart', helm: { valueFiles: ['$ARGOCD_APP_SOURCE_REPO_URL'] } })),
      /the URL scheme 'file' is not allowed/,
    );
  });

  test('kustomize: images and commonLabels always, commonAnnotations only with commonAnnotationsEnvsubst', async () => {
    const render = (annotationsEnvsubst: boolean) =>
      renderer.render(
        app({
          path: 'kbase',
          kustomize: {
            images: ['nginx=registry.local/nginx:${ARGOCD_APP_REVISION_SHORT_8}'],
            commonLabels: { app: 'web', owner: '$ARGOCD_APP_PROJECT_NAME' },
            commonAnnotations: { source: '$ARGOCD_APP_SOURCE_PATH@$ARGOCD_APP_SOURCE_TARGET_REVISION' },
            ...(annotationsEnvsubst ? { commonAnnotationsEnvsubst: true } : {}),
          },
        }),
      );
    type Deployment = {
      metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec: { template: { spec: { containers: Array<{ image: string }> } } };
    };
    const [plain] = (await render(false)).objects.map((o) => o.object as unknown as Deployment);
    assert.equal(plain?.spec.template.spec.containers[0]?.image, `registry.local/nginx:${head.slice(0, 8)}`);
    assert.equal(plain?.metadata.labels?.['owner'], 'tenants');
    assert.equal(plain?.metadata.annotations?.['source'], '$ARGOCD_APP_SOURCE_PATH@$ARGOCD_APP_SOURCE_TARGET_REVISION');
    const [substituted] = (await render(true)).objects.map((o) => o.object as unknown as Deployment);
    assert.equal(substituted?.metadata.annotations?.['source'], 'kbase@main');
  });

  test("kustomize: substituted values replace the kustomization's own with forceCommonLabels and forceCommonAnnotations", async () => {
    const r = await renderer.render(
      app({
        path: 'kown',
        kustomize: {
          images: ['nginx:$ARGOCD_APP_REVISION_SHORT'],
          commonLabels: { owner: '$ARGOCD_APP_PROJECT_NAME' },
          forceCommonLabels: true,
          commonAnnotations: { source: '$ARGOCD_APP_SOURCE_PATH' },
          forceCommonAnnotations: true,
          commonAnnotationsEnvsubst: true,
        },
      }),
    );
    type Deployment = {
      metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec: {
        selector: { matchLabels: Record<string, string> };
        template: { spec: { containers: Array<{ image: string }> } };
      };
    };
    const [d] = r.objects.map((o) => o.object as unknown as Deployment);
    // The image entry of the kustomization is replaced by the Application's (kustomize edit set image).
    assert.equal(d?.spec.template.spec.containers[0]?.image, `nginx:${head.slice(0, 7)}`);
    assert.equal(d?.metadata.annotations?.['source'], 'kown');
    assert.equal(d?.metadata.labels?.['owner'], 'tenants');
    assert.equal(d?.spec.selector.matchLabels['owner'], 'tenants');
  });
});
