// Finding the control-plane binaries: KUBEBUILDER_ASSETS, the cache, the build lock, only the ones
// asked for, progress during a build (with a fake `go`), and the message when none can be had (src/controlplane/binaries.ts, scripts/control-plane-binaries).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  binariesScript,
  binaryNames,
  locateBinaries,
  withoutControllerManager,
} from '../../src/controlplane/binaries.ts';

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

/**
 * A `go` that builds in a blink: it answers the script's module commands, and `go build -o DIR/
 * PKG...` writes a binary per package that reports `version`, after `seconds`. Its arguments go to
 * `log`, one call per line.
 */
async function fakeGo(dir: string, log: string, version: string, seconds = 0): Promise<string> {
  const bin = join(dir, 'fake-go-bin');
  await mkdir(bin, { recursive: true });
  const gomod = join(dir, 'upstream.go.mod');
  await writeFile(gomod, 'module k8s.io/kubernetes\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n)\n');
  await writeFile(
    join(bin, 'go'),
    `#!/bin/bash
echo "$*" >> '${log}'
case "$1 $2" in
  "mod download") printf '{\\n\\t"GoMod": "%s",\\n}\\n' '${gomod}' ;;
  build*)
    sleep ${seconds}
    out=""; prev=""
    for a in "$@"; do
      if [ "$prev" = -o ]; then out="$a"
      elif [ "$a" = . ]; then printf '#!/bin/sh\\necho etcd\\n' > "$out"; chmod +x "$out"
      elif [[ "$a" == k8s.io/kubernetes/cmd/* ]]; then
        printf '#!/bin/sh\\necho "Kubernetes ${version}"\\n' > "$out/\${a##*/}"; chmod +x "$out/\${a##*/}"
      fi
      prev="$a"
    done ;;
esac
`,
  );
  await chmod(join(bin, 'go'), 0o755);
  return bin;
}

test("npm start's demo asks for etcd and kube-apiserver: only those are built, and no kube-controller-manager is returned", async () => {
  const cache = join(root, 'demo-cache');
  const log = join(root, 'demo-go.log');
  const env = {
    PATH: `${await fakeGo(root, log, 'v9.9.9')}:${process.env['PATH']}`,
    HOME: root,
    IMPERSYNC_CACHE: cache,
    IMPERSYNC_KUBERNETES_VERSION: 'v9.9.9',
    IMPERSYNC_ETCD_VERSION: 'v6.6.6',
  };
  const found = await locateBinaries({ ...quiet, env, names: withoutControllerManager });
  const out = join(cache, 'control-plane', 'kubernetes-v9.9.9-etcd-v6.6.6');
  assert.deepEqual(found, { dir: out, etcd: join(out, 'etcd'), 'kube-apiserver': join(out, 'kube-apiserver') });
  const builds = (await readFile(log, 'utf8')).split('\n').filter((l) => l.startsWith('build '));
  assert.equal(builds.length, 2, builds.join('\n'));
  assert.match(builds[0] ?? '', / k8s\.io\/kubernetes\/cmd\/kube-apiserver$/);
  assert.doesNotMatch(builds.join('\n'), /kube-controller-manager/);
  assert.equal(existsSync(join(out, 'kube-controller-manager')), false);

  // The test suite then asks for all three: kube-controller-manager alone is built, beside the others.
  await writeFile(log, '');
  const all = await locateBinaries({ ...quiet, env });
  assert.equal(all['kube-controller-manager'], join(out, 'kube-controller-manager'));
  const more = (await readFile(log, 'utf8')).split('\n').filter((l) => l.startsWith('build '));
  assert.equal(more.length, 1, more.join('\n'));
  assert.match(more[0] ?? '', / -o \S+\/ k8s\.io\/kubernetes\/cmd\/kube-controller-manager$/);
  // And once all are there, asking again builds nothing.
  await writeFile(log, '');
  await locateBinaries({ ...quiet, env });
  assert.equal(await readFile(log, 'utf8'), '');
});

test('a build that takes a while shows the step and the time so far on the progress channel', async () => {
  const cache = join(root, 'slow-cache');
  const progress: string[] = [];
  const env = {
    PATH: `${await fakeGo(root, join(root, 'slow-go.log'), 'v9.9.9', 1)}:${process.env['PATH']}`,
    HOME: root,
    IMPERSYNC_CACHE: cache,
    IMPERSYNC_KUBERNETES_VERSION: 'v9.9.9',
    IMPERSYNC_ETCD_VERSION: 'v5.5.5',
    IMPERSYNC_PROGRESS_INTERVAL: '0.3',
  };
  // etcd is there already: the one build is kube-apiserver's, slowed to a second.
  await fakeBinaries(join(cache, 'control-plane', 'kubernetes-v9.9.9-etcd-v5.5.5'), ['etcd']);
  await locateBinaries({ env, names: withoutControllerManager, onProgress: (c) => progress.push(c) });
  const text = progress.join('');
  assert.match(text, /control-plane-binaries: building kube-apiserver v9\.9\.9 \(.* min on 2 cores.*\)\n/);
  assert.match(text, /control-plane-binaries: still building kube-apiserver v9\.9\.9: \d+ s so far, \d+ s in all \(/);
  assert.match(text, /control-plane-binaries: built kube-apiserver in \d+ s\n/);
});

test('an unknown binary name is refused', async () => {
  const r = spawnSync('bash', [binariesScript, 'kubelet'], { encoding: 'utf8', env: { PATH: await pathWithoutGo() } });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown binary 'kubelet'; this script provides etcd kube-apiserver kube-controller-manager/);
});
