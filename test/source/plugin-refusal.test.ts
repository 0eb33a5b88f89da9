// A source whose type is Plugin (spec.source.plugin, named or left to discovery) is refused when
// no plugin is configured, in Argo CD's repo-server words: its folder is never read as plain
// manifests (argocd-vault-plugin's `<password>` placeholders would otherwise reach the cluster).
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceError } from '../../src/source/errors.ts';
import { renderCheckout, type RenderEnvironment } from '../../src/source/render.ts';
import { renderEnvironment } from './tools.ts';

const SECRET = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: <password>\n';

describe('a plugin source with no plugin configured', () => {
  let top: string;
  let env: RenderEnvironment;
  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-plugin-refusal-'));
    await mkdir(path.join(top, 'checkout', 'avp'), { recursive: true });
    await writeFile(path.join(top, 'checkout', 'avp', 'secret.yaml'), SECRET);
    env = renderEnvironment(path.join(top, 'cache'));
  });
  after(async () => {
    if (top) await rm(top, { recursive: true, force: true });
  });

  const render = (plugin: unknown) =>
    renderCheckout(
      {
        checkoutDir: path.join(top, 'checkout'),
        source: { repoURL: 'https://example.com/r.git', path: 'avp', plugin } as ApplicationSource,
        appName: 'vault',
        instanceName: 'tenants_vault',
      },
      env,
    );
  const refused = (message: RegExp) => (err: unknown) => {
    assert.ok(err instanceof SourceError, String(err));
    assert.equal(err.reason, 'InvalidSource');
    assert.match(err.message, message);
    return true;
  };

  test('a named plugin is refused with the repo-server message naming it', async () => {
    await assert.rejects(
      render({ name: 'argocd-vault-plugin', env: [{ name: 'AVP_TYPE', value: 'vault' }] }),
      refused(
        /^CMP processing failed for application "tenants_vault": could not find cmp-server plugin with name "argocd-vault-plugin" supporting the given repository: /,
      ),
    );
  });

  test('plugin: {} (discovery) is refused too, and so is a plugin with only env', async () => {
    for (const plugin of [{}, { env: [{ name: 'A', value: 'b' }] }]) {
      await assert.rejects(
        render(plugin),
        refused(
          /^CMP processing failed for application "tenants_vault": could not find plugin supporting the given repository/,
        ),
      );
    }
  });

  test('a plugin beside a helm block is two source types, as in Argo CD', async () => {
    await assert.rejects(
      render({ name: 'x' }).then(() => undefined),
      SourceError,
    );
    await assert.rejects(
      renderCheckout(
        {
          checkoutDir: path.join(top, 'checkout'),
          source: {
            repoURL: 'https://example.com/r.git',
            path: 'avp',
            helm: { releaseName: 'r' },
            plugin: {},
          } as ApplicationSource,
          appName: 'vault',
        },
        env,
      ),
      (err: unknown) =>
        err instanceof SourceError && /multiple application sources defined: Helm,Plugin/.test(err.message),
    );
  });
});
