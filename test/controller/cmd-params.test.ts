// argocd-cmd-params-cm as Argo CD's application controller reads it (cmd-params.ts): a flag, then
// the environment variable its manifests fill from the key, then the key, then Argo CD's default;
// an unusable number keeps the default with util/env's warning; every key set and not acted on is
// named; keys of Argo CD's other components pass without a word.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gpgEnabled, resolveControllerParams, splitList } from '../../src/controller/cmd-params.ts';
import { CMD_PARAM_KEYS } from '../../src/controller/cmd-params-keys.ts';
import { changedKeys, readCmdParamsData } from '../../src/controller/cmd-params-watch.ts';
import type { ControlClient } from '../../src/kube/control.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { Writable } from 'node:stream';

const read = (data: Record<string, string> | undefined, env: Record<string, string> = {}, flags = {}) =>
  resolveControllerParams({ data, env, flags });

test("no ConfigMap, no variable, no flag: Argo CD's defaults and nothing to say", () => {
  const p = read(undefined);
  assert.deepEqual(p.applicationNamespaces, []);
  assert.equal(p.statusProcessors, 20);
  assert.equal(p.operationProcessors, 10);
  assert.deepEqual(p.selfHeal, { timeoutMs: 0, backoff: { durationMs: 2000, factor: 3, capMs: 300_000 } });
  assert.equal(p.syncTimeoutMs, 0);
  assert.equal(p.waveDelayMs, 2000);
  assert.equal(p.logLevel, undefined);
  assert.deepEqual(p.warnings, []);
});

test('application.namespaces: the flag, else ARGOCD_APPLICATION_NAMESPACES, else the key; items trimmed', () => {
  const data = { 'application.namespaces': 'ns1, ns2 ,team-*' };
  assert.deepEqual(read(data).applicationNamespaces, ['ns1', 'ns2', 'team-*']);
  assert.equal(read(data).sources['application.namespaces'], 'configmap');
  assert.deepEqual(read(data, { ARGOCD_APPLICATION_NAMESPACES: 'from-env' }).applicationNamespaces, ['from-env']);
  const flagged = read(data, { ARGOCD_APPLICATION_NAMESPACES: 'from-env' }, { applicationNamespaces: ['flag'] });
  assert.deepEqual(flagged.applicationNamespaces, ['flag']);
  assert.equal(flagged.sources['application.namespaces'], 'flag');
  // An empty variable is unset (StringsFromEnv), so the key decides.
  assert.deepEqual(read(data, { ARGOCD_APPLICATION_NAMESPACES: '' }).applicationNamespaces, ['ns1', 'ns2', 'team-*']);
  assert.deepEqual(splitList(' a,,b , '), ['a', 'b']);
});

test('the self-heal keys make the backoff; a backoff timeout of 0 leaves the fixed timeout', () => {
  const p = read({
    'controller.self.heal.backoff.timeout.seconds': '1',
    'controller.self.heal.backoff.factor': '4',
    'controller.self.heal.backoff.cap.seconds': '60',
    'controller.self.heal.timeout.seconds': '9',
  });
  assert.deepEqual(p.selfHeal, { timeoutMs: 9000, backoff: { durationMs: 1000, factor: 4, capMs: 60_000 } });
  const fixed = read({
    'controller.self.heal.backoff.timeout.seconds': '0',
    'controller.self.heal.timeout.seconds': '5',
  });
  assert.deepEqual(fixed.selfHeal, { timeoutMs: 5000 });
  // The variable wins over the key.
  const env = read(
    { 'controller.self.heal.backoff.factor': '4' },
    { ARGOCD_APPLICATION_CONTROLLER_SELF_HEAL_BACKOFF_FACTOR: '2' },
  );
  assert.equal(env.selfHeal.backoff?.factor, 2);
});

test("an unusable number keeps the default, with Argo CD's ParseNumFromEnv warning naming the key", () => {
  const p = read({
    'controller.sync.timeout.seconds': 'ten',
    'controller.status.processors': '0',
    'controller.operation.processors': '-3',
  });
  assert.equal(p.syncTimeoutMs, 0);
  assert.equal(p.statusProcessors, 20);
  assert.equal(p.operationProcessors, 10);
  assert.deepEqual(p.warnings, [
    'Value in ARGOCD_APPLICATION_CONTROLLER_STATUS_PROCESSORS (argocd-cmd-params-cm controller.status.processors) is 0, which is less than minimum 1 allowed',
    'Value in ARGOCD_APPLICATION_CONTROLLER_OPERATION_PROCESSORS (argocd-cmd-params-cm controller.operation.processors) is -3, which is less than minimum 1 allowed',
    "Could not parse 'ten' as a number from environment ARGOCD_APPLICATION_CONTROLLER_SYNC_TIMEOUT (argocd-cmd-params-cm controller.sync.timeout.seconds)",
  ]);
  const env = read(undefined, { ARGOCD_APPLICATION_CONTROLLER_SYNC_TIMEOUT: '1.5' });
  assert.deepEqual(env.warnings, [
    "Could not parse '1.5' as a number from environment ARGOCD_APPLICATION_CONTROLLER_SYNC_TIMEOUT",
  ]);
});

test('processors, sync timeout, wave delay and log level: the flag wins, then the variable, then the key', () => {
  const data = {
    'controller.status.processors': '3',
    'controller.operation.processors': '4',
    'controller.sync.timeout.seconds': '600',
    'controller.sync.wave.delay.seconds': '5',
    'controller.log.level': 'debug',
    'controller.log.format': 'json',
  };
  const p = read(data);
  assert.deepEqual(
    [p.statusProcessors, p.operationProcessors, p.syncTimeoutMs, p.waveDelayMs, p.logLevel],
    [3, 4, 600_000, 5000, 'debug'],
  );
  assert.deepEqual(p.warnings, []);
  const flags = read(data, { ARGOCD_SYNC_WAVE_DELAY: '0' }, { statusProcessors: 7, logLevel: 'info' });
  assert.deepEqual([flags.statusProcessors, flags.waveDelayMs, flags.logLevel], [7, 0, undefined]);
  // A negative delay sleeps not at all, as time.Sleep.
  assert.equal(read({ 'controller.sync.wave.delay.seconds': '-4' }).waveDelayMs, 0);
});

test('keys set and not acted on are named, each with why; other components\u2019 keys pass in silence', () => {
  const p = read({
    'controller.sharding.algorithm': 'round-robin',
    'controller.diff.server.side': 'false',
    'controller.resource.health.persist': 'true',
    'controller.log.format': 'text',
    'controller.self.heal.backoff.cooldown.seconds': '330',
    'server.insecure': 'true',
    'reposerver.parallelism.limit': '2',
    'applicationsetcontroller.policy': 'sync',
    'timeout.reconciliation': '60s',
    'controller.typo': 'x',
  });
  assert.deepEqual(p.warnings, [
    "ARGOCD_APPLICATION_CONTROLLER_LOGFORMAT (argocd-cmd-params-cm controller.log.format) is 'text' and not acted on: impersync logs JSON lines only",
    'ARGOCD_APPLICATION_CONTROLLER_SELF_HEAL_BACKOFF_COOLDOWN_SECONDS (argocd-cmd-params-cm controller.self.heal.backoff.cooldown.seconds) has no effect: Argo CD deprecated it ("This flag is deprecated and has no effect.")',
    "ARGOCD_APPLICATION_CONTROLLER_SERVER_SIDE_DIFF (argocd-cmd-params-cm controller.diff.server.side) is 'false' and not acted on: `true`: every Application compares as with ServerSideDiff=true, what mutating webhooks change left out unless it says IncludeMutationWebhook=true; `false` (client-side diff) is named: impersync always diffs with a server-side dry-run apply",
    'ARGOCD_CONTROLLER_SHARDING_ALGORITHM (argocd-cmd-params-cm controller.sharding.algorithm) is set and not acted on: impersync shards Applications by a hash of their namespace/name (--shards), not clusters by an algorithm',
    "argocd-cmd-params-cm controller.typo is not a key Argo CD's application controller reads; not acted on",
    'argocd-cmd-params-cm timeout.reconciliation is not read from here: it is an argocd-cm key (set it there)',
  ]);
});

test("Argo CD's variables that are argocd-cm keys are named when set", () => {
  const p = read(undefined, { ARGOCD_RECONCILIATION_TIMEOUT: '30s', ARGOCD_CONTROLLER_REPLICAS: '1' });
  assert.deepEqual(p.warnings, [
    "ARGOCD_RECONCILIATION_TIMEOUT is set and not read: impersync reads argocd-cm's timeout.reconciliation (from which Argo CD's manifests set it)",
  ]);
});

test("every application-controller key of Argo CD's manifests has a rule", () => {
  // From manifests/base/application-controller/argocd-application-controller-statefulset.yaml and
  // the -deployment variant (configMapKeyRef argocd-cmd-params-cm), Argo CD 37ee0097cf.
  const manifestKeys = [
    'application.namespaces',
    'commit.server',
    'controller.app.state.cache.expiration',
    'controller.cluster.cache.batch.events.processing',
    'controller.cluster.cache.events.processing.interval',
    'controller.default.cache.expiration',
    'controller.diff.server.side',
    'controller.grpc.enable.txt.service.config',
    'controller.hydration.processors',
    'controller.ignore.normalizer.jq.timeout',
    'controller.k8s.client.burst',
    'controller.k8s.client.max.idle.connections',
    'controller.k8s.client.qps',
    'controller.k8s.tcp.idle.timeout',
    'controller.k8s.tcp.keepalive',
    'controller.k8s.tcp.timeout',
    'controller.k8s.tls.handshake.timeout',
    'controller.k8sclient.retry.base.backoff',
    'controller.k8sclient.retry.max',
    'controller.kubectl.parallelism.limit',
    'controller.log.format',
    'controller.log.level',
    'controller.metrics.application.conditions',
    'controller.metrics.application.labels',
    'controller.metrics.cache.expiration',
    'controller.metrics.cluster.labels',
    'controller.operation.processors',
    'controller.profile.enabled',
    'controller.repo.error.grace.period.seconds',
    'controller.repo.server.ca.cert.path',
    'controller.repo.server.client.cert.key.path',
    'controller.repo.server.client.cert.path',
    'controller.repo.server.plaintext',
    'controller.repo.server.strict.tls',
    'controller.repo.server.timeout.seconds',
    'controller.resource.health.persist',
    'controller.self.heal.backoff.cap.seconds',
    'controller.self.heal.backoff.cooldown.seconds',
    'controller.self.heal.backoff.factor',
    'controller.self.heal.backoff.timeout.seconds',
    'controller.self.heal.timeout.seconds',
    'controller.sharding.algorithm',
    'controller.status.processors',
    'controller.sync.timeout.seconds',
    'controller.sync.wave.delay.seconds',
    'hydrator.enabled',
    'log.format.timestamp',
    'otlp.address',
    'otlp.attrs',
    'otlp.headers',
    'otlp.insecure',
    'otlp.sample.ratio',
    'redis.compression',
    'redis.db',
    'redis.key.prefix',
    'redis.sentinel.hosts',
    'redis.sentinel.master',
    'redis.server',
    'repo.server',
  ];
  assert.deepEqual(CMD_PARAM_KEYS.map((k) => k.key).sort(), manifestKeys);
  // Each named key set is said once, whatever it is set to.
  for (const k of CMD_PARAM_KEYS.filter((x) => x.support === 'named')) {
    const said = read({ [k.key]: 'x' }).warnings.filter((w) => w.includes(k.key));
    assert.equal(said.length, 1, k.key);
  }
});

test('a change of the ConfigMap is the keys whose values differ', () => {
  assert.deepEqual(changedKeys({ a: '1', b: '2' }, { a: '1', b: '3', c: '4' }), ['b', 'c']);
  assert.deepEqual(changedKeys({ a: '1' }, undefined), ['a']);
  assert.deepEqual(changedKeys({ a: '1' }, { a: '1' }), []);
});

test('docs/semantics.md has a row for every key, saying what the rule says', async () => {
  const { readFile } = await import('node:fs/promises');
  const doc = await readFile(new URL('../../docs/semantics.md', import.meta.url), 'utf8');
  for (const k of CMD_PARAM_KEYS) {
    const row = doc.split('\n').find((l) => l.startsWith(`| \`${k.key}\` |`));
    assert.ok(row, `no row for ${k.key}`);
    assert.ok(row.includes(k.support === 'honoured' ? '| honoured:' : '| **named**:'), row);
  }
});

test('reading the ConfigMap: absent is no data; refused is said at once; an API server that does not answer is tried again', async () => {
  const lines: string[] = [];
  const log = createLogger(
    { level: 'warn' },
    new Writable({
      write(c, _e, cb) {
        lines.push(String(c));
        cb();
      },
    }),
  );
  const answering = (codes: number[]) => {
    let calls = 0;
    const control = {
      request: async () => {
        const code = codes[Math.min(calls++, codes.length - 1)] as number;
        return code === 200
          ? { ok: true, value: { data: { 'controller.status.processors': '3' } }, warnings: [] }
          : { ok: false, error: { code, reason: 'x', message: `HTTP ${code}` } };
      },
    } as unknown as ControlClient;
    return { control, calls: () => calls };
  };
  const ok = answering([503, 0, 200]);
  assert.deepEqual(await readCmdParamsData(ok.control, 'argocd', log, 1), { 'controller.status.processors': '3' });
  assert.equal(ok.calls(), 3);
  assert.equal(await readCmdParamsData(answering([404]).control, 'argocd', log, 1), undefined);
  assert.deepEqual(lines, []);
  const refused = answering([403]);
  assert.equal(await readCmdParamsData(refused.control, 'argocd', log, 1), undefined);
  assert.equal(refused.calls(), 1);
  assert.match(
    lines[0] ?? '',
    /argocd-cmd-params-cm cannot be read: its keys take their defaults \(grant get, list and watch on it\)/,
  );
  const down = answering([503]);
  assert.equal(await readCmdParamsData(down.control, 'argocd', log, 1), undefined);
  assert.equal(down.calls(), 5);
});

test("ARGOCD_GPG_ENABLED: off only for false or no, in any case, as Argo CD's IsGPGEnabled", () => {
  assert.equal(gpgEnabled({}), true);
  assert.equal(gpgEnabled({ ARGOCD_GPG_ENABLED: 'true' }), true);
  assert.equal(gpgEnabled({ ARGOCD_GPG_ENABLED: 'anything' }), true);
  assert.equal(gpgEnabled({ ARGOCD_GPG_ENABLED: 'false' }), false);
  assert.equal(gpgEnabled({ ARGOCD_GPG_ENABLED: 'FALSE' }), false);
  assert.equal(gpgEnabled({ ARGOCD_GPG_ENABLED: 'No' }), false);
});
