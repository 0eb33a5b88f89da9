// Config management plugins through renderCheckout and Argo CD's real argocd-cmp-server (v3.6.1):
// the repo-server's protocol (CheckPluginConfiguration, MatchRepository, GenerateManifest with the
// repository as a tar.gz), its environment (ARGOCD_ENV_*, ARGOCD_APP_*, KUBE_*, parameters), and the
// limits every render has: a hanging plugin is cut off, a symlink out of the repository is not sent.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { buildEnv } from '../../src/source/build-env.ts';
import { SourceError } from '../../src/source/errors.ts';
import { renderCheckout, type RenderEnvironment } from '../../src/source/render.ts';
import { pluginYaml, startCmpSidecars, type CmpSidecars } from '../support/cmp.ts';
import { renderEnvironment } from './tools.ts';

// Prints a ConfigMap of what the plugin was given, and of a file of the app folder.
const GENERATE = `cat <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: from-plugin
data:
  greeting: "$ARGOCD_ENV_GREETING"
  color: "$PARAM_COLOR"
  size0: "$PARAM_SIZES_0"
  tier: "$PARAM_LABELS_TIER"
  app: "$ARGOCD_APP_NAME"
  revision: "$ARGOCD_APP_REVISION"
  kube: "$KUBE_VERSION"
  apis: "$KUBE_API_VERSIONS"
  file: "$(cat message.txt)"
  sibling: "$(cat ../shared/common.txt)"
  parameters: '$ARGOCD_APP_PARAMETERS'
EOF`;

describe('a plugin source rendered by a real argocd-cmp-server', () => {
  let top: string;
  let env: RenderEnvironment;
  let sidecars: CmpSidecars;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-cmp-'));
    const write = async (rel: string, text: string) => {
      await mkdir(path.dirname(path.join(top, rel)), { recursive: true });
      await writeFile(path.join(top, rel), text);
    };
    await write('checkout/app/message.txt', 'from the repository');
    await write('checkout/shared/common.txt', 'beside the app folder');
    await write('checkout/found/marker.greet', 'x');
    await write('checkout/plain/cm.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n');
    // A repository of its own: the whole repository is sent, so its link would fail every render.
    await write('escaping/escape/message.txt', 'x');
    await write('secret.txt', 'the renderer file no plugin may read');
    await symlink('../../secret.txt', path.join(top, 'escaping/escape/leak.txt'));
    sidecars = await startCmpSidecars({
      greeter: pluginYaml('greeter', GENERATE),
      sleeper: pluginYaml('sleeper', 'sleep 600'),
      // Asks the repo-server for the source repository's Git credentials.
      gitcreds: pluginYaml(
        'gitcreds',
        'printf "apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: with-creds\\n"',
        '  provideGitCreds: true',
      ),
      // Found by its discovery rule, for `plugin: {}` and for a source that names no type.
      finder: pluginYaml(
        'finder',
        'printf "apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: discovered\\n"',
        '  discover:\n    fileName: "*.greet"',
      ),
    });
    env = { ...renderEnvironment(path.join(top, 'cache')), pluginSocketDir: sidecars.socketDir };
  });
  after(async () => {
    await sidecars?.stop();
    if (top) await rm(top, { recursive: true, force: true });
  });

  const render = (source: Partial<ApplicationSource>, over: Partial<RenderEnvironment> = {}, repo = 'checkout') =>
    renderCheckout(
      {
        checkoutDir: path.join(top, repo),
        source: { repoURL: 'https://example.com/r.git', ...source } as ApplicationSource,
        appName: 'greet',
        buildEnv: buildEnv({ appName: 'greet', revision: 'abcdef1234567890', repoURL: 'https://example.com/r.git' }),
        kubeVersion: 'v1.34.3',
        apiVersions: ['v1', 'apps/v1'],
      },
      { ...env, ...over },
    );

  test('a named plugin gets plugin.env, the parameters, the build variables and the repository', async () => {
    const parameters = [
      { name: 'color', string: 'blue' },
      { name: 'sizes', array: ['s', 'm'] },
      { name: 'labels', map: { tier: 'web' } },
    ];
    const out = await render({
      path: 'app',
      plugin: { name: 'greeter', env: [{ name: 'GREETING', value: 'hello $ARGOCD_APP_NAME' }], parameters },
    });
    assert.equal(out.sourceType, 'Plugin');
    assert.equal(out.objects.length, 1);
    const data = out.objects[0]?.object.data as Record<string, string>;
    assert.deepEqual(
      { ...data, parameters: JSON.parse(data['parameters'] ?? '') as unknown },
      {
        greeting: 'hello greet',
        color: 'blue',
        size0: 's',
        tier: 'web',
        app: 'greet',
        revision: 'abcdef1234567890',
        kube: '1.34.3',
        apis: 'v1,apps/v1',
        file: 'from the repository',
        sibling: 'beside the app folder',
        parameters,
      },
    );
  });

  test('a hanging plugin is cut off by the time limit, as a Timeout', async () => {
    const started = Date.now();
    await assert.rejects(
      render({ path: 'app', plugin: { name: 'sleeper' } }, { limits: { ...env.limits, toolTimeoutMs: 2000 } }),
      (err: unknown) =>
        err instanceof SourceError &&
        err.reason === 'Timeout' &&
        /^CMP processing failed for application "greet": the plugin took longer than the render's time limit of 2s/.test(
          err.message,
        ),
    );
    assert.ok(Date.now() - started < 15_000, 'cut off near the limit');
  });

  test('a symlink out of the repository is refused, never followed into the stream', async () => {
    await assert.rejects(
      render({ path: 'escape', plugin: { name: 'greeter' } }, {}, 'escaping'),
      (err: unknown) =>
        err instanceof SourceError && /symlink 'escape\/leak\.txt' leads outside the repository/.test(err.message),
    );
  });

  test('a name with no socket is the repo-server message; plugin: {} and an untyped source find a plugin by discovery', async () => {
    await assert.rejects(
      render({ path: 'app', plugin: { name: 'absent' } }),
      (err: unknown) =>
        err instanceof SourceError &&
        /could not find cmp-server plugin with name "absent" supporting the given repository/.test(err.message),
    );
    for (const source of [{ path: 'found', plugin: {} }, { path: 'found' }]) {
      const out = await render(source);
      assert.equal(out.sourceType, 'Plugin');
      assert.deepEqual(
        out.objects.map((o) => o.object.metadata.name),
        ['discovered'],
      );
    }
    // No plugin's discovery claims this folder: it stays a Directory, and `plugin: {}` is refused.
    assert.equal((await render({ path: 'plain' })).sourceType, 'Directory');
    await assert.rejects(
      render({ path: 'plain', plugin: {} }),
      (err: unknown) =>
        err instanceof SourceError && /could not find plugin supporting the given repository/.test(err.message),
    );
  });

  test('provideGitCreds: no credential to give renders as Argo CD does; a repository with one is refused, never handed over', async () => {
    const out = await render({ path: 'app', plugin: { name: 'gitcreds' } });
    assert.deepEqual(
      out.objects.map((o) => o.object.metadata.name),
      ['with-creds'],
    );
    await assert.rejects(
      renderCheckout(
        {
          checkoutDir: path.join(top, 'checkout'),
          source: {
            repoURL: 'https://example.com/r.git',
            path: 'app',
            plugin: { name: 'gitcreds' },
          } as ApplicationSource,
          appName: 'greet',
          sourceHasCredential: true,
        },
        env,
      ),
      (err: unknown) =>
        err instanceof SourceError &&
        /plugin gitcreds asks for the Git credentials of 'https:\/\/example.com\/r.git' \(provideGitCreds: true/.test(
          err.message,
        ),
    );
  });
});
