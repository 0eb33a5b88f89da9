// Where the renderer replicas are: `--renderer` values parsed into addresses and names, and a
// headless Service's name looked up (here with an injected resolver and clock) at first use, again
// after the interval and when a replica did not answer, the last addresses kept when a lookup fails.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReplicaAddresses, parseRendererTargets, type ResolveAddresses } from '../../src/renderer/replicas.ts';
import { SourceError } from '../../src/source/errors.ts';

test('--renderer takes URLs, repeated or comma-separated, and dns+http://NAME:PORT; anything else is refused naming it', () => {
  assert.deepEqual(parseRendererTargets(['http://a:8081/']), [{ kind: 'url', url: 'http://a:8081' }]);
  assert.deepEqual(parseRendererTargets(['http://a:1, http://b:2', 'unix:/run/r.sock']), [
    { kind: 'url', url: 'http://a:1' },
    { kind: 'url', url: 'http://b:2' },
    { kind: 'url', url: 'unix:/run/r.sock' },
  ]);
  assert.deepEqual(parseRendererTargets(['dns+http://impersync-renderer-headless.argocd.svc:8081']), [
    {
      kind: 'dns',
      host: 'impersync-renderer-headless.argocd.svc',
      port: 8081,
      given: 'dns+http://impersync-renderer-headless.argocd.svc:8081',
    },
  ]);
  for (const [values, message] of [
    [['ftp://a'], /--renderer must be http:\/\/host:port.*not 'ftp:\/\/a'/],
    [['http://a:1,'], /--renderer needs an address/],
    [['dns+http://name'], /--renderer must be dns\+http:\/\/name:port, not 'dns\+http:\/\/name'/],
    [['dns+http://name:99999'], /has no valid port/],
    [['dns+https://name:443'], /dns\+https is not supported/],
  ] as const) {
    const r = parseRendererTargets(values);
    assert.equal(typeof r, 'string', values.join(','));
    assert.match(r as string, message);
  }
});

/** A resolver answering from `answers` (an Error is thrown), counting its calls. */
function resolver(answers: Record<string, string[] | Error>): ResolveAddresses & { calls: number } {
  const fn = Object.assign(
    async (host: string) => {
      fn.calls++;
      const a = answers[host];
      if (a instanceof Error) throw a;
      if (!a) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      return a;
    },
    { calls: 0 },
  );
  return fn;
}

test('a name is looked up at first use, its every A and AAAA address a replica (IPv6 in brackets), with the given URLs', async () => {
  const answers: Record<string, string[] | Error> = { 'r.ns.svc': ['10.0.0.2', 'fd00::7', '10.0.0.1', '10.0.0.2'] };
  const changes: string[][] = [];
  const replicas = new ReplicaAddresses({
    targets: [
      { kind: 'dns', host: 'r.ns.svc', port: 8081, given: 'dns+http://r.ns.svc:8081' },
      { kind: 'url', url: 'http://outside:9000' },
    ],
    resolve: resolver(answers),
    onChange: (r) => changes.push([...r]),
  });
  const expected = ['http://10.0.0.1:8081', 'http://10.0.0.2:8081', 'http://[fd00::7]:8081', 'http://outside:9000'];
  assert.deepEqual(await replicas.current(), expected);
  assert.deepEqual(await replicas.current(), expected);
  assert.deepEqual(changes, [expected], 'told once, for the one change');
});

test('looked up again after the interval and, sooner, when asked (at most once a second); a failed lookup keeps the addresses known', async () => {
  let now = 0;
  const answers: Record<string, string[] | Error> = { r: ['10.0.0.1', '10.0.0.2'] };
  const resolve = resolver(answers);
  const errors: string[] = [];
  const replicas = new ReplicaAddresses({
    targets: [{ kind: 'dns', host: 'r', port: 80, given: 'dns+http://r:80' }],
    resolve,
    resolveIntervalMs: 30_000,
    now: () => now,
    onLookupError: (given, err) => errors.push(`${given}: ${err.message}`),
  });
  const settle = () => new Promise((r) => setImmediate(r));
  assert.deepEqual(await replicas.current(), ['http://10.0.0.1:80', 'http://10.0.0.2:80']);
  assert.equal(resolve.calls, 1);

  // A replica added: seen once the interval has passed (the request that notices is not held up).
  answers['r'] = ['10.0.0.1', '10.0.0.2', '10.0.0.3'];
  now = 29_000;
  await replicas.current();
  assert.equal(resolve.calls, 1, 'not before the interval');
  now = 30_000;
  await replicas.current();
  await settle();
  assert.equal(resolve.calls, 2);
  assert.deepEqual(await replicas.current(), ['http://10.0.0.1:80', 'http://10.0.0.2:80', 'http://10.0.0.3:80']);

  // A replica gone, noticed on a failed connection: looked up at once, but not twice in a second.
  answers['r'] = ['10.0.0.1', '10.0.0.3'];
  now = 30_500;
  replicas.refresh();
  await settle();
  assert.equal(resolve.calls, 2, 'not within a second of the last lookup');
  now = 31_000;
  replicas.refresh();
  replicas.refresh();
  await settle();
  assert.equal(resolve.calls, 3, 'one lookup for both');
  assert.deepEqual(await replicas.current(), ['http://10.0.0.1:80', 'http://10.0.0.3:80']);

  // DNS fails: the addresses known before stay, and the failure is told.
  answers['r'] = Object.assign(new Error('queryA ETIMEOUT r'), { code: 'ETIMEOUT' });
  now = 62_000;
  await replicas.current();
  await settle();
  assert.equal(resolve.calls, 4);
  assert.deepEqual(await replicas.current(), ['http://10.0.0.1:80', 'http://10.0.0.3:80']);
  assert.deepEqual(errors, ['dns+http://r:80: queryA ETIMEOUT r']);
});

test('a name that never resolved is an error naming it, and is looked up again a second later', async () => {
  let now = 0;
  const answers: Record<string, string[] | Error> = {};
  const resolve = resolver(answers);
  const replicas = new ReplicaAddresses({
    targets: [{ kind: 'dns', host: 'renderer-headless', port: 8081, given: 'dns+http://renderer-headless:8081' }],
    resolve,
    now: () => now,
  });
  await assert.rejects(replicas.current(), (err: unknown) => {
    assert.ok(err instanceof SourceError);
    assert.equal(err.reason, 'RendererUnavailable');
    assert.match(
      err.message,
      /no renderer address is known \(renderer-headless: getaddrinfo ENOTFOUND renderer-headless\)/,
    );
    return true;
  });
  answers['renderer-headless'] = [];
  now = 1000;
  await assert.rejects(replicas.current(), /renderer-headless: the name has no address/);
  answers['renderer-headless'] = ['10.1.2.3'];
  now = 2000;
  assert.deepEqual(await replicas.current(), ['http://10.1.2.3:8081']);
  assert.equal(resolve.calls, 3);
});

test('looked up every interval with no request at all, and no more once closed', async () => {
  const resolve = resolver({ r: ['10.0.0.1'] });
  const replicas = new ReplicaAddresses({
    targets: [{ kind: 'dns', host: 'r', port: 80, given: 'dns+http://r:80' }],
    resolve,
    resolveIntervalMs: 10,
  });
  await replicas.current();
  for (let i = 0; i < 500 && resolve.calls < 3; i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(resolve.calls >= 3, `looked up ${resolve.calls} times by the timer`);
  replicas.close();
  await new Promise((r) => setTimeout(r, 20));
  const calls = resolve.calls;
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(resolve.calls, calls, 'closed: no lookup');
  await replicas.current();
  await new Promise((r) => setTimeout(r, 100));
  assert.ok(resolve.calls <= calls + 1, 'and no timer started again by a use after close');
});
