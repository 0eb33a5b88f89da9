// No value from an Application or a repository reaches helm's argv as a flag: the release name is
// checked by Helm's own rule before helm runs, the positional arguments come after `--`, and every
// other value goes in as `--flag=value`. The hostile values try to make helm run a post-renderer
// of the tenant's choosing, which would write a marker file.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ApplicationSource } from '../../src/api/application.ts';
import { SourceError, SourceRenderer } from '../../src/source/index.ts';
import { TestRepo } from '../support/git.ts';
import { toolsDir } from './tools.ts';

describe('tool flags', () => {
  let repo: TestRepo;
  let top: string;
  let marker: string;
  let script: string;
  let renderer: SourceRenderer;

  before(async () => {
    top = await mkdtemp(path.join(os.tmpdir(), 'impersync-flags-'));
    marker = path.join(top, 'post-renderer-ran');
    script = path.join(top, 'post.sh');
    await writeFile(script, `#!/bin/sh\ntouch '${marker}'\ncat\n`);
    await chmod(script, 0o755);
    repo = await TestRepo.create();
    await repo.commit({
      'chart/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
      'chart/templates/cm.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n  namespace: {{ .Release.Namespace | quote }}\ndata:\n  x: {{ .Values.x | default "" | quote }}\n  caps: {{ .Capabilities.APIVersions.Has "evil/v1" | quote }}\n',
    });
    renderer = new SourceRenderer({
      allowLocalRepositories: true,
      cacheDir: path.join(top, 'cache'),
      toolsDir: toolsDir(),
    });
  });
  after(async () => {
    await repo?.remove();
    if (top) await rm(top, { recursive: true, force: true });
  });

  const helmSource = (helm: Record<string, unknown> = {}): ApplicationSource =>
    ({ repoURL: repo.dir, path: 'chart', helm }) as ApplicationSource;

  test("a release name helm would refuse is refused before helm runs, in helm's words", async () => {
    for (const name of [
      `--post-renderer=${script}`,
      '-f/etc/passwd',
      '--kubeconfig=/etc/passwd',
      'UPPER',
      'a'.repeat(54),
    ]) {
      await assert.rejects(
        renderer.render({ source: helmSource({ releaseName: name }), appName: 'app' }),
        (err: unknown) => {
          assert.ok(err instanceof SourceError, String(err));
          assert.equal(err.reason, 'InvalidSource', err.message);
          assert.ok(
            err.message.startsWith(
              `release name ${JSON.stringify(name)}: invalid release name, must match regex ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ and the length must not be longer than 53`,
            ),
            err.message,
          );
          return true;
        },
      );
    }
    // The default release name, the Application's name, is held to the same rule.
    await assert.rejects(
      renderer.render({ source: helmSource(), appName: `--post-renderer=${script}` }),
      /invalid release name/,
    );
    assert.ok(!existsSync(marker), 'the post-renderer never ran');
    const ok = await renderer.render({ source: helmSource({ releaseName: 'a'.repeat(53) }), appName: 'app' });
    assert.equal(ok.objects[0]?.object.metadata.name, 'a'.repeat(53));
  });

  test('namespace, kubeVersion, apiVersions and parameters arrive as values, never as flags', async () => {
    const hostile = `--post-renderer=${script}`;
    const r = await renderer.render({
      source: helmSource({
        namespace: hostile,
        apiVersions: [hostile, 'evil/v1'],
        parameters: [{ name: 'x', value: hostile }],
      }),
      appName: 'app',
    });
    const cm = r.objects[0]?.object as unknown as { metadata: { namespace: string }; data: Record<string, string> };
    assert.equal(cm.metadata.namespace, hostile);
    assert.equal(cm.data.x, hostile);
    assert.equal(cm.data.caps, 'true');
    await assert.rejects(
      renderer.render({ source: helmSource(), appName: 'app', kubeVersion: hostile }),
      // Read as Argo CD reads it (parseKubeVersion) before helm runs: not a version.
      /could not parse kubernetes version --post-renderer=/,
    );
    assert.ok(!existsSync(marker), 'the post-renderer never ran');
  });
});
