// client-go credential plugins as the controller runs them (src/kube/exec-credential.ts): real
// processes (small shell scripts), client-go's messages, and impersync's bounds (time, stdout,
// stderr excerpt); the cache of one cluster credential's plugin output.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  EXEC_STDERR_EXCERPT,
  ExecCredentialSource,
  runExecPlugin,
  type ExecConfig,
} from '../../src/kube/exec-credential.ts';

const V1BETA1 = 'client.authentication.k8s.io/v1beta1';
const V1 = 'client.authentication.k8s.io/v1';
let dir = '';

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'impersync-exec-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A plugin: a shell script at dir/name running `body`. */
async function plugin(name: string, body: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}

const credential = (apiVersion: string, status: Record<string, unknown>) =>
  JSON.stringify({ apiVersion, kind: 'ExecCredential', status });

const config = (command: string, over: Partial<ExecConfig> = {}): ExecConfig => ({
  command,
  args: [],
  env: {},
  apiVersion: V1BETA1,
  ...over,
});

describe('running a plugin as client-go does', () => {
  test('args and env reach it with KUBERNETES_EXEC_INFO (spec.interactive false, the cluster when asked); its token comes back', async () => {
    const seen = path.join(dir, 'seen.json');
    const cmd = await plugin(
      'echo-info',
      `printf '%s\\n%s\\n%s' "$KUBERNETES_EXEC_INFO" "$1 $2" "$REGION" > ${seen}\necho '${credential(V1, { token: 't0k', expirationTimestamp: '2030-01-02T03:04:05Z' })}'`,
    );
    const got = await runExecPlugin(
      config(cmd, {
        args: ['--cluster-name', 'prod'],
        env: { REGION: 'eu-west-1' },
        apiVersion: V1,
        cluster: { server: 'https://prod.example', 'certificate-authority-data': 'Q0E=', config: { a: 1 } },
      }),
    );
    assert.deepEqual(got, { token: 't0k', expiresAt: Date.parse('2030-01-02T03:04:05Z') });
    const [info, args, region] = (await readFile(seen, 'utf8')).split('\n');
    assert.deepEqual(JSON.parse(info ?? ''), {
      kind: 'ExecCredential',
      apiVersion: V1,
      spec: {
        cluster: { server: 'https://prod.example', 'certificate-authority-data': 'Q0E=', config: { a: 1 } },
        interactive: false,
      },
    });
    assert.equal(args, '--cluster-name prod');
    assert.equal(region, 'eu-west-1');
  });

  test('no shell: an argument is passed as it is written', async () => {
    const cmd = await plugin('argv', `[ "$1" = '$(id)' ] && echo '${credential(V1BETA1, { token: 'ok' })}'`);
    assert.deepEqual(await runExecPlugin(config(cmd, { args: ['$(id)'] })), { token: 'ok' });
  });

  test("client-go's refusals of what a plugin printed", async () => {
    const cases: Array<[string, string]> = [
      [
        credential(V1, { token: 'x' }),
        `exec plugin is configured to use API version ${V1BETA1}, plugin returned version ${V1}`,
      ],
      [JSON.stringify({ apiVersion: V1BETA1, kind: 'ExecCredential' }), "exec plugin didn't return a status field"],
      [credential(V1BETA1, {}), "exec plugin didn't return a token or cert/key pair"],
      [credential(V1BETA1, { clientCertificateData: 'x' }), 'exec plugin returned only certificate or key, not both'],
      ['not json', 'decoding stdout: '],
    ];
    for (const [i, [stdout, message]] of cases.entries()) {
      const cmd = await plugin(`bad-${i}`, `cat <<'EOF'\n${stdout}\nEOF`);
      await assert.rejects(runExecPlugin(config(cmd)), (err: Error) => err.message.startsWith(message), message);
    }
  });

  test('an apiVersion client-go does not know is refused before anything runs', async () => {
    const cmd = await plugin('never', `touch ${path.join(dir, 'ran')}`);
    await assert.rejects(runExecPlugin(config(cmd, { apiVersion: 'client.authentication.k8s.io/v1alpha1' })), {
      message: 'exec plugin: invalid apiVersion "client.authentication.k8s.io/v1alpha1"',
    });
    await assert.rejects(readFile(path.join(dir, 'ran')));
  });

  test('a missing command: "exec: executable ... not found", client-go\'s help and the installHint', async () => {
    await assert.rejects(
      runExecPlugin(config('impersync-no-such-plugin', { installHint: 'install it with brew' })),
      (err: Error) =>
        err.message.startsWith('exec: executable impersync-no-such-plugin not found\n\nIt looks like you are trying') &&
        err.message.endsWith('\n\ninstall it with brew'),
    );
  });

  test('a failing plugin: its exit code, and only an excerpt of its stderr, on one line', async () => {
    const cmd = await plugin(
      'fails',
      `printf 'token expired\\nrun login' >&2\nhead -c 20000 /dev/zero | tr '\\0' x >&2\nexit 3`,
    );
    await assert.rejects(runExecPlugin(config(cmd)), (err: Error) => {
      assert.ok(
        err.message.startsWith(`exec: executable ${cmd} failed with exit code 3; stderr: token expired run loginxxx`),
      );
      assert.ok(!err.message.includes('\n'));
      assert.ok(err.message.length < cmd.length + 80 + EXEC_STDERR_EXCERPT, `${err.message.length} characters`);
      return true;
    });
  });

  test('a plugin that does not finish is killed at the timeout, with what it started', async () => {
    const pidFile = path.join(dir, 'sleep.pid');
    const cmd = await plugin('sleeps', `sleep 600 &\necho $! > ${pidFile}\nwait`);
    // 3 s: room for the shell to start its sleep on a loaded machine before it is killed.
    await assert.rejects(runExecPlugin(config(cmd), { timeoutMs: 3_000 }), {
      message: `exec: executable ${cmd} did not finish within 3s and was killed`,
    });
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    // Gone, or a zombie where PID 1 does not reap orphans (a container): either way not running.
    const state = await readFile(`/proc/${pid}/stat`, 'utf8').then(
      (stat) => stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3),
      () => 'gone',
    );
    assert.ok(state === 'gone' || state === 'Z', `the sleep it started is ${state}`);
  });

  test('stdout is read up to 1 MiB', async () => {
    const cmd = await plugin('floods', 'head -c 3000000 /dev/zero');
    await assert.rejects(runExecPlugin(config(cmd)), {
      message: `exec: executable ${cmd} wrote more than 1048576 bytes to stdout`,
    });
  });
});

describe("one cluster credential's plugin output (client-go's Authenticator cache)", () => {
  /** A plugin that counts its runs in a file and prints `status`. */
  async function counting(name: string, status: Record<string, unknown>) {
    const runs = path.join(dir, `${name}.runs`);
    const cmd = await plugin(name, `echo run >> ${runs}\necho '${credential(V1BETA1, status)}'`);
    const count = async () => (await readFile(runs, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
    return { cmd, count };
  }

  test('kept until its expirationTimestamp: many requests at once and after share one run', async () => {
    const { cmd, count } = await counting('cached', { token: 'a', expirationTimestamp: '2100-01-01T00:00:00Z' });
    const source = new ExecCredentialSource(config(cmd));
    const all = await Promise.all(Array.from({ length: 10 }, () => source.get()));
    for (let i = 0; i < 5; i++) all.push(await source.get());
    assert.ok(all.every((c) => c.token === 'a'));
    assert.equal(await count(), 1);
  });

  test('run again once expired, and after a 401 answered a request made with it', async () => {
    let now = Date.parse('2030-01-01T00:00:00Z');
    const { cmd, count } = await counting('expiring', { token: 'b', expirationTimestamp: '2030-01-01T00:10:00Z' });
    const source = new ExecCredentialSource(config(cmd), { now: () => now });
    const first = await source.get();
    await source.get();
    assert.equal(await count(), 1);
    source.unauthorized({ token: 'b' }); // another credential's 401 (not this one) changes nothing
    await source.get();
    assert.equal(await count(), 1);
    source.unauthorized(first);
    await source.get();
    assert.equal(await count(), 2);
    now += 11 * 60_000;
    await source.get();
    assert.equal(await count(), 3);
  });

  test('without an expirationTimestamp, kept until a 401', async () => {
    const { cmd, count } = await counting('forever', { token: 'c' });
    const source = new ExecCredentialSource(config(cmd), { now: () => Date.parse('2999-01-01T00:00:00Z') });
    await source.get();
    await source.get();
    assert.equal(await count(), 1);
  });

  test('a failure is given to the requests of the next 5 s without running it again', async () => {
    let now = 0;
    const runs = path.join(dir, 'failing.runs');
    const cmd = await plugin('failing', `echo run >> ${runs}\nexit 1`);
    const source = new ExecCredentialSource(config(cmd), { now: () => now });
    await assert.rejects(source.get(), /failed with exit code 1/);
    await assert.rejects(source.get(), /failed with exit code 1/);
    now += 6_000;
    await assert.rejects(source.get(), /failed with exit code 1/);
    assert.equal((await readFile(runs, 'utf8')).trim().split('\n').length, 2);
  });
});
