// Finding the control-plane binaries: KUBEBUILDER_ASSETS, the cache, the build lock, and the
// message when none can be had (src/controlplane/binaries.ts, scripts/control-plane-binaries).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { binariesScript, binaryNames, locateBinaries } from '../../src/controlplane/binaries.ts';

const root = await mkdtemp(join(tmpdir(), 'binaries-test-'));
after(() => rm(root, { recursive: true, force: true }));

/** Executables that answer --version like the real ones. */
async function fakeBinaries(dir: string, names: readonly string[] = binaryNames, version = 'v9.9.9'): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const name of names) {
    await writeFile(join(dir, name), `#!/bin/sh\necho "Kubernetes ${version}"\n`);
    await chmod(join(dir, name), 0o755);
  }
}

/** A PATH with only bash and cat: the script runs, Go is nowhere. */
async function pathWithoutGo(): Promise<string> {
  const bin = join(root, 'no-go-bin');
  await mkdir(bin, { recursive: true });
  for (const tool of ['bash', 'cat']) await symlink(`/bin/${tool}`, join(bin, tool)).catch(() => {});
  return bin;
}

const quiet = { onProgress: () => {} };

test('KUBEBUILDER_ASSETS with all three binaries is used as is, without running the script', async () => {
  const assets = join(root, 'assets');
  await fakeBinaries(assets);
  const found = await locateBinaries({
    ...quiet,
    env: { KUBEBUILDER_ASSETS: assets },
    script: join(root, 'does-not-exist'),
  });
  assert.equal(found.dir, assets);
  assert.equal(found['kube-apiserver'], join(assets, 'kube-apiserver'));
});

test('without Go, binaries or KUBEBUILDER_ASSETS, the error says how to get them', async () => {
  const env = { PATH: await pathWithoutGo(), HOME: root, IMPERSYNC_CACHE: join(root, 'empty-cache') };
  await assert.rejects(locateBinaries({ ...quiet, env }), (err: Error) => {
    assert.match(err.message, /Go is not installed/);
    assert.match(err.message, /KUBEBUILDER_ASSETS/);
    assert.ok(err.message.includes(binariesScript), 'names the script to run');
    return true;
  });
});

test('KUBEBUILDER_ASSETS lacking a binary is reported, and the script falls back to a build', async () => {
  const partial = join(root, 'partial');
  await fakeBinaries(partial, ['etcd', 'kube-apiserver']);
  const env = {
    PATH: await pathWithoutGo(),
    HOME: root,
    IMPERSYNC_CACHE: join(root, 'empty-cache'),
    KUBEBUILDER_ASSETS: partial,
  };
  await assert.rejects(
    locateBinaries({ ...quiet, env }),
    /lacks one of etcd kube-apiserver kube-controller-manager; building them instead[\s\S]*Go is not installed/,
  );
});

test('a cached build is found without Go', async () => {
  const cache = join(root, 'cache');
  await fakeBinaries(join(cache, 'control-plane', 'kubernetes-v9.9.9-etcd-v8.8.8'));
  const env = {
    PATH: await pathWithoutGo(),
    HOME: root,
    IMPERSYNC_CACHE: cache,
    IMPERSYNC_KUBERNETES_VERSION: 'v9.9.9',
    IMPERSYNC_ETCD_VERSION: 'v8.8.8',
  };
  const found = await locateBinaries({ ...quiet, env });
  assert.equal(found.dir, join(cache, 'control-plane', 'kubernetes-v9.9.9-etcd-v8.8.8'));
});

test('a cached build that does not report the pinned version is rebuilt', async () => {
  const cache = join(root, 'stale-cache');
  await fakeBinaries(
    join(cache, 'control-plane', 'kubernetes-v9.9.9-etcd-v8.8.8'),
    binaryNames,
    'v0.0.0-master+$Format:%H$',
  );
  const env = {
    PATH: await pathWithoutGo(),
    HOME: root,
    IMPERSYNC_CACHE: cache,
    IMPERSYNC_KUBERNETES_VERSION: 'v9.9.9',
    IMPERSYNC_ETCD_VERSION: 'v8.8.8',
  };
  await assert.rejects(
    locateBinaries({ ...quiet, env }),
    /kube-apiserver does not report v9\.9\.9; rebuilding[\s\S]*Go is not installed/,
  );
});

test('while another build holds the lock, the script waits for it and then uses its result', async () => {
  const cache = join(root, 'locked-cache');
  const out = join(cache, 'control-plane', 'kubernetes-v9.9.9-etcd-v7.7.7');
  await mkdir(join(cache, 'control-plane'), { recursive: true });
  // A "go" that fails: reaching it would mean the script built instead of waiting.
  const bin = join(root, 'failing-go-bin');
  await mkdir(bin, { recursive: true });
  await writeFile(join(bin, 'go'), '#!/bin/sh\necho "go must not run" >&2\nexit 1\n');
  await chmod(join(bin, 'go'), 0o755);
  // Hold the lock, as a running build would, until the script says it waits for it; then finish
  // "building" and release. The holder says when it has the lock (the file `locked`), and the test
  // says when it may go on (the file `go-on`): however slow the machine, the script finds the lock
  // held, and the build is not done before the script waits.
  const locked = join(cache, 'locked');
  const goOn = join(cache, 'go-on');
  const holder = spawn(
    'flock',
    [
      join(cache, 'control-plane', '.build.lock'),
      'sh',
      '-c',
      `touch '${locked}'; while [ ! -e '${goOn}' ]; do sleep 0.05; done; mkdir -p '${out}'; for b in ${binaryNames.join(' ')}; do printf '#!/bin/sh\\necho Kubernetes v9.9.9\\n' > '${out}'/$b; chmod +x '${out}'/$b; done`,
    ],
    { stdio: 'ignore' },
  );
  const held = new Promise((resolve) => holder.on('exit', resolve));
  // Should the script never say it waits, the holder goes on after 30 s and the test fails on the
  // message, instead of hanging.
  const fallback = setTimeout(() => writeFileSync(goOn, ''), 30_000);
  try {
    const end = Date.now() + 30_000;
    while (!existsSync(locked)) {
      if (Date.now() > end) assert.fail('flock did not take the lock within 30 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const progress: string[] = [];
    const env = {
      PATH: `${bin}:${process.env['PATH']}`,
      HOME: root,
      IMPERSYNC_CACHE: cache,
      IMPERSYNC_KUBERNETES_VERSION: 'v9.9.9',
      IMPERSYNC_ETCD_VERSION: 'v7.7.7',
    };
    const found = await locateBinaries({
      env,
      onProgress: (c) => {
        progress.push(c);
        if (/another build is running; waiting for it/.test(progress.join(''))) writeFileSync(goOn, '');
      },
    });
    await held;
    assert.equal(found.dir, out);
    assert.match(progress.join(''), /another build is running; waiting for it/);
  } finally {
    // Whatever happened, the holder ends (and the lock with it).
    clearTimeout(fallback);
    writeFileSync(goOn, '');
  }
});
