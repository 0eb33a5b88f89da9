// The config management plugin sidecars of the install: the chart's renderer.plugins and the
// kustomize component deploy/install/components/cmp-sidecar, rendered with the real helm and
// kustomize and read as objects. What makes a plugin work and keeps it contained: each sidecar runs
// Argo CD's argocd-cmp-server as Argo CD's docs install it (copied from Argo CD's image by the
// copyutil init container to /var/run/argocd/argocd-cmp-server, that the entrypoint), writes its
// socket into the folder the renderer reads (--plugin-sockets, default $ARGOCD_PLUGINSOCKFILEPATH
// then /home/argocd/cmp-server/plugins), reads its plugin.yaml where argocd-cmp-server looks
// (/home/argocd/cmp-server/config/plugin.yaml), runs as the renderer's uid (its socket is 0755, the
// renderer must own it to connect), and holds no Kubernetes credential and none of the renderer's
// volumes but the sockets, nor another plugin's files; the renderer container is the one of the
// install without plugins, plus the sockets folder.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEFAULT_PLUGIN_SOCKET_DIR } from '../../src/source/cmp/defaults.ts';
import type { KubeObject } from '../support/index.ts';
import { parseYamlDocuments } from '../support/index.ts';
import { deploymentOf } from './pod-checks.ts';
import type { Container, PodSpec, Volume } from './pod-checks.ts';
import { find, helmTemplate, kustomizeBuild, kustomizeOverlay, repoRoot } from './render.ts';

// Argo CD's paths (common/common.go: DefaultPluginSockFilePath, DefaultPluginConfigFilePath and
// PluginConfigFileName), and the binary its docs run as the sidecar's entrypoint.
const ARGOCD_SOCKET_DIR = '/home/argocd/cmp-server/plugins';
const ARGOCD_PLUGIN_CONFIG = '/home/argocd/cmp-server/config/plugin.yaml';
const CMP_SERVER = '/var/run/argocd/argocd-cmp-server';
const TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';

type Mount = { name: string; mountPath: string; subPath?: string; readOnly?: boolean };
type EnvVar = { name: string; value?: string; valueFrom?: Record<string, unknown> };
type FullContainer = Omit<Container, 'volumeMounts' | 'env'> & {
  image: string;
  command?: string[];
  envFrom?: Record<string, unknown>[];
  env?: EnvVar[];
  volumeMounts: Mount[];
};
type FullPod = Omit<PodSpec, 'containers' | 'initContainers'> & {
  containers: FullContainer[];
  initContainers?: FullContainer[];
};

/** The Argo CD release the renderer speaks the plugin protocol of (scripts/argocd-binaries). */
async function pinnedArgocdVersion(): Promise<string> {
  const script = await readFile(join(repoRoot, 'scripts/argocd-binaries'), 'utf8');
  const version = /ARGOCD_VERSION="\$\{IMPERSYNC_ARGOCD_VERSION:-(v[0-9.]+)\}"/.exec(script)?.[1];
  assert.ok(version, 'scripts/argocd-binaries pins ARGOCD_VERSION');
  return version;
}

const envOf = (c: FullContainer, name: string) => c.env?.find((e) => e.name === name);

/** Where the renderer looks for sockets: --plugin-sockets, else $ARGOCD_PLUGINSOCKFILEPATH, else the default (cli/renderer.ts). */
function rendererSocketDir(c: FullContainer): string {
  const args = c.args;
  for (const [i, a] of args.entries()) {
    if (a.startsWith('--plugin-sockets=')) return a.slice('--plugin-sockets='.length);
    if (a === '--plugin-sockets') return args[i + 1] ?? '';
  }
  const env = envOf(c, 'ARGOCD_PLUGINSOCKFILEPATH');
  assert.equal(env?.valueFrom, undefined, 'the renderer socket folder is a literal');
  return env?.value || DEFAULT_PLUGIN_SOCKET_DIR;
}

/** Where argocd-cmp-server writes its socket: $ARGOCD_PLUGINSOCKFILEPATH, else Argo CD's default. */
function sidecarSocketDir(c: FullContainer): string {
  const env = envOf(c, 'ARGOCD_PLUGINSOCKFILEPATH');
  assert.equal(env?.valueFrom, undefined, `${c.name}: the socket folder is a literal`);
  return env?.value || ARGOCD_SOCKET_DIR;
}

function podOf(objects: KubeObject[]): FullPod {
  return deploymentOf(objects, 'renderer').pod as unknown as FullPod;
}

function volumeOf(pod: FullPod, c: FullContainer, path: string): { mount: Mount; volume: Volume } {
  const mount = c.volumeMounts.find((m) => m.mountPath === path);
  assert.ok(mount, `${c.name} mounts something at ${path}`);
  const volume = pod.volumes.find((v) => v.name === mount.name);
  assert.ok(volume, `${c.name}: the volume ${mount.name} mounted at ${path} is in the Pod`);
  return { mount, volume };
}

/** Volumes a sidecar may see: emptyDirs of its own and ConfigMaps (its plugin.yaml); nothing with a credential. */
const harmless = (v: Volume) =>
  Object.keys(v)
    .filter((k) => k !== 'name')
    .every((k) => k === 'emptyDir' || k === 'configMap');

/**
 * Checks one plugin sidecar `name` in a rendered install; returns the ConfigMap its plugin.yaml
 * comes from. `baseline` is the same install rendered without plugins.
 */
async function sidecarChecks(objects: KubeObject[], baseline: KubeObject[], name: string): Promise<string> {
  const pod = podOf(objects);
  const renderer = pod.containers.find((c) => c.name === 'renderer');
  assert.ok(renderer, 'the renderer container');
  const sidecar = pod.containers.find((c) => c.name === name);
  assert.ok(sidecar, `the sidecar ${name}`);

  // The entrypoint as Argo CD documents it: argocd-cmp-server, copied from Argo CD's image (the
  // release whose protocol the renderer speaks) into a volume the sidecar mounts at the same path.
  assert.deepEqual(sidecar.command, [CMP_SERVER], `${name}: command`);
  assert.equal(sidecar.args, undefined, `${name}: no args`);
  const copyutil = pod.initContainers?.find((c) => c.name === 'copyutil');
  assert.ok(copyutil, 'the copyutil init container');
  assert.deepEqual(copyutil.command, ['/bin/cp', '-n', '/usr/local/bin/argocd', CMP_SERVER]);
  assert.equal(copyutil.image, `quay.io/argoproj/argocd:${await pinnedArgocdVersion()}`);
  const binaryDir = CMP_SERVER.slice(0, CMP_SERVER.lastIndexOf('/'));
  const written = volumeOf(pod, copyutil, binaryDir);
  const run = volumeOf(pod, sidecar, binaryDir);
  assert.equal(run.volume, written.volume, `${name} runs the binary copyutil wrote`);
  assert.ok(written.volume.emptyDir, 'the binary is in an emptyDir');
  assert.equal(run.mount.readOnly, true, `${name} cannot replace argocd-cmp-server (its own or another's)`);
  assert.deepEqual(
    copyutil.volumeMounts.map((m) => m.name),
    [written.mount.name],
    'copyutil mounts only that volume',
  );

  // The socket folder: the same volume, where the sidecar writes and where the renderer reads.
  const inSidecar = volumeOf(pod, sidecar, sidecarSocketDir(sidecar));
  const inRenderer = volumeOf(pod, renderer, rendererSocketDir(renderer));
  assert.equal(inSidecar.volume, inRenderer.volume, 'the renderer reads the folder the sidecar writes its socket to');
  assert.ok(inSidecar.volume.emptyDir, 'the socket folder is an emptyDir');
  for (const m of [inSidecar.mount, inRenderer.mount])
    assert.equal(m.subPath, undefined, 'the whole folder, not a file of it');

  // The plugin's configuration, where argocd-cmp-server reads it.
  const config = volumeOf(pod, sidecar, ARGOCD_PLUGIN_CONFIG);
  assert.equal(config.mount.subPath, 'plugin.yaml');
  const configMap = (config.volume['configMap'] as { name?: string } | undefined)?.name;
  assert.ok(configMap, `${name}: plugin.yaml comes from a ConfigMap`);

  // Its /tmp (argocd-cmp-server's work folder, os.TempDir()) is its own, as Argo CD's docs require.
  const tmp = volumeOf(pod, sidecar, '/tmp');
  assert.ok(tmp.volume.emptyDir, `${name}: /tmp is an emptyDir`);
  for (const other of [...pod.containers, ...(pod.initContainers ?? [])].filter((c) => c !== sidecar))
    assert.ok(!other.volumeMounts.some((m) => m.name === tmp.mount.name), `${name}'s /tmp is not ${other.name}'s`);

  // No Kubernetes credential, and none of the renderer's volumes but the sockets.
  assert.equal(pod.automountServiceAccountToken, false, 'the Pod mounts no ServiceAccount token');
  const sa = find(objects, 'ServiceAccount', pod.serviceAccountName);
  assert.equal(sa['automountServiceAccountToken'], false, `ServiceAccount ${pod.serviceAccountName}: no token mounted`);
  for (const m of sidecar.volumeMounts) {
    const v = pod.volumes.find((x) => x.name === m.name);
    assert.ok(v && harmless(v), `${name} mounts ${m.name}, an emptyDir or ConfigMap (${JSON.stringify(v)})`);
    assert.ok(!m.mountPath.startsWith('/var/run/secrets'), `${name}: nothing at ${m.mountPath}`);
  }
  assert.ok(!sidecar.volumeMounts.some((m) => TOKEN_PATH.startsWith(m.mountPath)), 'nothing at the token path');
  assert.deepEqual(
    sidecar.volumeMounts.filter((m) => renderer.volumeMounts.some((r) => r.name === m.name)).map((m) => m.name),
    [inSidecar.mount.name],
    `${name} shares only the socket folder with the renderer`,
  );
  assert.equal(sidecar.envFrom, undefined, `${name}: no envFrom`);
  for (const e of sidecar.env ?? [])
    assert.ok(!e.valueFrom || !('secretKeyRef' in e.valueFrom), `${name}: env ${e.name} reads no Secret`);

  // The renderer's uid (argocd-cmp-server's socket is 0755: only its owner may connect), locked down.
  assert.equal(pod.securityContext['runAsUser'], 65533);
  assert.equal(sidecar.securityContext['runAsUser'] ?? 65533, 65533, `${name} runs as the renderer's uid`);
  assert.equal(sidecar.securityContext['runAsGroup'] ?? 65533, 65533, `${name} runs as the renderer's gid`);
  assert.deepEqual(sidecar.securityContext, {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ['ALL'] },
  });
  assert.equal(copyutil.securityContext['allowPrivilegeEscalation'], false);
  assert.equal(copyutil.securityContext['readOnlyRootFilesystem'], true);

  // The renderer itself is the one without plugins, plus the socket folder.
  const before = podOf(baseline).containers.find((c) => c.name === 'renderer');
  assert.deepEqual(
    { ...renderer, volumeMounts: renderer.volumeMounts.filter((m) => m !== inRenderer.mount) },
    before,
    'the renderer container is unchanged but for the socket folder',
  );
  assert.equal(inRenderer.mount.mountPath, DEFAULT_PLUGIN_SOCKET_DIR);
  return configMap;
}

const avp = {
  name: 'avp',
  image: 'registry.example.com/argocd-vault-plugin:1.18.1',
  volumeMounts: [{ name: 'avp-config', mountPath: ARGOCD_PLUGIN_CONFIG, subPath: 'plugin.yaml' }],
};
const avpVolume = { name: 'avp-config', configMap: { name: 'cmp-avp' } };

test('chart: a renderer.plugins sidecar runs argocd-cmp-server beside the renderer, its socket where the renderer reads, no credential', async () => {
  const objects = helmTemplate({
    setJson: [
      `renderer.plugins.sidecars=${JSON.stringify([avp])}`,
      `renderer.plugins.volumes=[${JSON.stringify(avpVolume)}]`,
    ],
  });
  assert.equal(await sidecarChecks(objects, helmTemplate(), 'avp'), 'cmp-avp');
  const pod = podOf(objects);
  assert.deepEqual(pod.containers.map((c) => c.name).sort(), ['avp', 'renderer']);
  assert.equal(pod.containers.find((c) => c.name === 'avp')?.image, avp.image);
  // The controller's Pod is untouched.
  assert.deepEqual(deploymentOf(objects, 'controller').pod, deploymentOf(helmTemplate(), 'controller').pod);
});

test('chart: two plugin sidecars share the socket folder and argocd-cmp-server, each with its own /tmp', async () => {
  const kustomized = {
    name: 'kustomized-helm',
    image: 'registry.example.com/kustomized-helm:2',
    volumeMounts: [{ name: 'kh-config', mountPath: ARGOCD_PLUGIN_CONFIG, subPath: 'plugin.yaml' }],
  };
  const objects = helmTemplate({
    setJson: [
      `renderer.plugins.sidecars=${JSON.stringify([avp, kustomized])}`,
      `renderer.plugins.volumes=${JSON.stringify([avpVolume, { name: 'kh-config', configMap: { name: 'cmp-kh' } }])}`,
    ],
  });
  const baseline = helmTemplate();
  assert.equal(await sidecarChecks(objects, baseline, 'avp'), 'cmp-avp');
  assert.equal(await sidecarChecks(objects, baseline, 'kustomized-helm'), 'cmp-kh');
  const pod = podOf(objects);
  assert.equal(pod.initContainers?.length, 1, 'one copyutil for both');
  const names = new Set(pod.volumes.map((v) => v.name));
  assert.equal(names.size, pod.volumes.length, 'no volume named twice');
});

test('chart: without renderer.plugins the renderer Pod has no sidecar, init container or plugin volume', () => {
  const pod = podOf(helmTemplate());
  assert.deepEqual(
    pod.containers.map((c) => c.name),
    ['renderer'],
  );
  assert.equal(pod.initContainers, undefined);
  assert.ok(!pod.volumes.some((v) => v.name.startsWith('cmp-')));
});

test('kustomize: the cmp-sidecar component adds my-plugin to the renderer, its plugin.yaml from its ConfigMap', async () => {
  const objects = kustomizeOverlay(['deploy/install'], ['deploy/install/components/cmp-sidecar']);
  const baseline = kustomizeBuild('deploy/install');
  const configMap = await sidecarChecks(objects, baseline, 'my-plugin');
  const cm = find(objects, 'ConfigMap', configMap);
  assert.equal(cm.metadata.namespace, deploymentOf(objects, 'renderer').deployment.metadata.namespace);
  const [plugin] = parseYamlDocuments((cm['data'] as Record<string, string>)['plugin.yaml'] ?? '', 'plugin.yaml');
  assert.ok(plugin);
  assert.deepEqual(
    [plugin.apiVersion, plugin.kind, plugin.metadata.name],
    ['argoproj.io/v1alpha1', 'ConfigManagementPlugin', 'my-plugin'],
  );
  // Nothing else of the install changes: the same objects, but the renderer Deployment and the ConfigMap.
  const key = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
  const rendererKey = key(deploymentOf(objects, 'renderer').deployment);
  assert.deepEqual(
    objects.filter((o) => key(o) !== rendererKey && o !== cm),
    baseline.filter((o) => key(o) !== rendererKey),
  );
});

test('kustomize and chart: the component and renderer.plugins make the same sidecar', () => {
  const fromKustomize = podOf(kustomizeOverlay(['deploy/install'], ['deploy/install/components/cmp-sidecar']));
  const sidecar = fromKustomize.containers.find((c) => c.name === 'my-plugin');
  assert.ok(sidecar);
  const config = sidecar.volumeMounts.find((m) => m.mountPath === ARGOCD_PLUGIN_CONFIG);
  const fromChart = podOf(
    helmTemplate({
      setJson: [
        `renderer.plugins.sidecars=${JSON.stringify([
          { name: 'my-plugin', image: sidecar.image, resources: sidecar.resources, volumeMounts: [config] },
        ])}`,
        `renderer.plugins.volumes=${JSON.stringify(fromKustomize.volumes.filter((v) => v.name === config?.name))}`,
      ],
    }),
  );
  const norm = (pod: FullPod) => {
    const c = pod.containers.find((x) => x.name === 'my-plugin');
    const vol = (n: string) => {
      const { name: _, ...rest } = pod.volumes.find((v) => v.name === n) ?? { name: n };
      return rest;
    };
    return {
      copyutil: pod.initContainers?.map(({ volumeMounts, ...rest }) => ({
        ...rest,
        volumeMounts: volumeMounts.map((m) => ({ ...m, name: vol(m.name) })),
      })),
      sidecar: c && {
        ...c,
        volumeMounts: c.volumeMounts
          .map((m) => ({ ...m, name: vol(m.name) }))
          .sort((a, b) => a.mountPath.localeCompare(b.mountPath)),
      },
    };
  };
  assert.deepEqual(norm(fromChart), norm(fromKustomize));
});
