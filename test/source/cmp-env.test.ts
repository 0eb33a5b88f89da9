// The plugin environment (Argo CD's getPluginEnvs and ApplicationSourcePluginParameters.Environ)
// and the protocol's messages, without a cmp-server: the cases a real plugin cannot tell apart.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pluginEnv } from '../../src/source/cmp/env.ts';
import { decode, decodeParametersAnnouncementResponse, encode, metadataRequest } from '../../src/source/cmp/wire.ts';

test('plugin.env is ARGOCD_ENV_<name> with build variables substituted; parameters as JSON and PARAM_*', () => {
  const env = pluginEnv({
    buildEnv: { ARGOCD_APP_NAME: 'web' },
    kubeVersion: 'v1.34.3+k3s1',
    apiVersions: ['v1', 'apps/v1'],
    plugin: {
      env: [{ name: 'A', value: '$ARGOCD_APP_NAME-$KUBE_VERSION-$HOME-$$' }],
      parameters: [
        { name: 'my-param', string: '<b>&' },
        { name: 'list', array: ['x', 'y'] },
        { name: 'm', map: { 'k-2': 'v2', a: 'v1' } },
      ],
    },
  });
  const byName = Object.fromEntries(env.map((e) => [e.name, e.value]));
  assert.equal(byName['KUBE_VERSION'], '1.34.3');
  assert.equal(byName['KUBE_API_VERSIONS'], 'v1,apps/v1');
  // $HOME is not a build variable: empty, as Go's os.Expand with Argo CD's mapping gives.
  assert.equal(byName['ARGOCD_ENV_A'], 'web-1.34.3--$');
  assert.equal(
    byName['ARGOCD_APP_PARAMETERS'],
    '[{"name":"my-param","string":"\\u003cb\\u003e\\u0026"},{"name":"list","array":["x","y"]},{"name":"m","map":{"a":"v1","k-2":"v2"}}]',
  );
  assert.equal(byName['PARAM_MY_PARAM'], '<b>&');
  assert.equal(byName['PARAM_LIST_0'], 'x');
  assert.equal(byName['PARAM_LIST_1'], 'y');
  assert.equal(byName['PARAM_M_K_2'], 'v2');
  assert.ok(!env.some((e) => e.name === 'HOME' || e.name === 'PATH'), 'nothing of the renderer');
});

test('the metadata message round-trips through the wire format, a negative varint included', () => {
  const msg = metadataRequest({
    appName: 'a',
    appRelPath: 'x/a',
    checksum: 'ff',
    size: 300,
    env: [{ name: 'N', value: 'v' }],
  });
  const [[no, meta]] = decode(msg) as [[number, Buffer]];
  assert.equal(no, 1);
  const fields = decode(meta);
  assert.deepEqual(
    fields.map(([n, v]) => [n, Buffer.isBuffer(v) ? v.toString('utf8') : v]),
    [
      [1, 'a'],
      [2, 'x/a'],
      [3, 'ff'],
      [4, 300n],
      [5, '\n\u0001N\u0012\u0001v'],
    ],
  );
  assert.deepEqual(decode(encode([[1, -1]])), [[1, (1n << 64n) - 1n]]);
  assert.throws(() => decode(Buffer.from([0x0a, 0x05, 0x61])), /runs past the end/);
});

test('a parameter announcement map named __proto__ is a key, not a prototype', () => {
  const entry = encode([
    [1, '__proto__'],
    [2, 'x'],
  ]);
  const announcement = encode([
    [1, 'p'],
    [9, entry],
  ]);
  const [p] = decodeParametersAnnouncementResponse(encode([[1, announcement]]));
  assert.equal(p?.name, 'p');
  assert.equal(Object.getPrototypeOf(p?.map), null);
  assert.equal(Object.hasOwn(p?.map ?? {}, '__proto__'), true);
});
