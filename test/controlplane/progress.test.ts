// The progress lines of the binaries scripts (scripts/lib/progress.sh): during a long step, a line
// at least every 30 s with what is being done, the time so far and the expected total, on stderr,
// and nothing left running once the script ends, however it ends. Fast: a fake slow step, a short
// interval (IMPERSYNC_PROGRESS_INTERVAL), no Go.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const lib = join(repo, 'scripts/lib/progress.sh');
const root = await mkdtemp(join(tmpdir(), 'progress-test-'));
after(() => rm(root, { recursive: true, force: true }));

/** Gone, or a zombie that its new parent has not reaped yet: either way it runs no more. */
function gone(pid: number): boolean {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return true;
  }
}

type Run = { code: number | null; signal: string | null; stdout: string; stderr: string; exitToCloseMs: number };

/** Runs a script that sources the library; `onStarted` gets the child once it runs. */
async function runScript(body: string, env: NodeJS.ProcessEnv, onStarted?: (pid: number) => void): Promise<Run> {
  const file = join(root, `script-${Math.random().toString(36).slice(2)}.sh`);
  await writeFile(file, `set -euo pipefail\nlog() { echo "fake-binaries: $*" >&2; }\n. '${lib}'\n${body}\n`);
  return new Promise((resolve) => {
    const child = spawn('bash', [file], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let exitedAt = 0;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('exit', () => (exitedAt = Date.now()));
    // 'close' comes when every process holding the pipes is gone: a ticker left behind delays it.
    child.on('close', (code, signal) =>
      resolve({ code, signal, stdout, stderr, exitToCloseMs: Date.now() - exitedAt }),
    );
    if (child.pid) onStarted?.(child.pid);
  });
}

test('during a slow step a line comes every interval with the step, the time so far and the expected total', async () => {
  const r = await runScript(
    'step "building something slow" "about 1 s on 2 cores"\nsleep 1.3\nstep "a quick step" "seconds"\necho /the/folder',
    { IMPERSYNC_PROGRESS_INTERVAL: '0.25' },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '/the/folder\n', 'stdout carries the folder only');
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines[0], 'fake-binaries: building something slow (about 1 s on 2 cores)');
  const ticks = lines.filter((l) => l.startsWith('fake-binaries: still building something slow: '));
  assert.ok(ticks.length >= 3, `a line every 0.25 s during 1.3 s:\n${r.stderr}`);
  for (const t of ticks)
    assert.match(
      t,
      /^fake-binaries: still building something slow: \d+ s so far, \d+ s in all \(about 1 s on 2 cores\)$/,
    );
  assert.ok(lines.includes('fake-binaries: a quick step (seconds)'));
  // The next step stopped the first one's ticker.
  const after = lines.slice(lines.indexOf('fake-binaries: a quick step (seconds)'));
  assert.ok(!after.some((l) => l.includes('still building something slow')), r.stderr);
  assert.ok(r.exitToCloseMs < 1000, `nothing held the pipes after the script ended (${r.exitToCloseMs} ms)`);
});

test('without IMPERSYNC_PROGRESS_INTERVAL the interval is 30 s, so a fast script prints the step line only', async () => {
  const r = await runScript('step "building" "seconds"\nsleep 0.3\necho done', {});
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, 'fake-binaries: building (seconds)\n');
  assert.ok(r.exitToCloseMs < 1000, `the ticker ended with the script (${r.exitToCloseMs} ms)`);
  assert.match(readFileSync(lib, 'utf8'), /IMPERSYNC_PROGRESS_INTERVAL:-30\}/);
});

test('a failing step ends the script and its ticker (set -e, the EXIT trap)', async () => {
  const r = await runScript('step "building" "seconds"\nsleep 0.3\nfalse\necho unreachable', {
    IMPERSYNC_PROGRESS_INTERVAL: '0.1',
  });
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.ok(r.exitToCloseMs < 1000, `the ticker ended with the script (${r.exitToCloseMs} ms)`);
});

test('a script killed with SIGKILL (no trap runs) leaves a ticker that ends by itself within an interval', async () => {
  const ticker = join(root, 'ticker.pid');
  const sleeper = join(root, 'sleep.pid');
  const r = await runScript(
    `step "building" "seconds"\necho "$progress_pid" > '${ticker}'\n` +
      `sleep 30 </dev/null >/dev/null 2>&1 & echo $! > '${sleeper}'\nwait`,
    { IMPERSYNC_PROGRESS_INTERVAL: '0.2' },
    (pid) => setTimeout(() => process.kill(pid, 'SIGKILL'), 700),
  );
  try {
    process.kill(Number(readFileSync(sleeper, 'utf8')), 'SIGKILL');
  } catch {
    // already gone
  }
  assert.equal(r.signal, 'SIGKILL');
  assert.match(r.stderr, /still building: /);
  // The pipes closed once the ticker noticed: within an interval or so of the kill, not never.
  assert.ok(r.exitToCloseMs < 1500, `the ticker ended ${r.exitToCloseMs} ms after the script`);
  // Its files close before the kernel marks it a zombie: give the exit the moment it takes.
  const tickerPid = Number(readFileSync(ticker, 'utf8'));
  for (let i = 0; i < 50 && !gone(tickerPid); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(gone(tickerPid), 'the ticker is gone');
});

test('elapsed() reads as seconds below a minute and as minutes and seconds above', async () => {
  const r = await runScript('for s in 0 59 60 125 3600; do elapsed "$s"; done', {});
  assert.equal(r.stdout, '0 s\n59 s\n1 min 00 s\n2 min 05 s\n60 min 00 s\n');
});

test('every binaries script sources the library and names a step before each Go build or install', () => {
  for (const script of ['control-plane-binaries', 'tool-binaries', 'kwok-binary', 'registry-binary']) {
    const text = readFileSync(join(repo, 'scripts', script), 'utf8');
    assert.match(text, /^\. "\$here\/lib\/progress\.sh"$/m, `${script} sources scripts/lib/progress.sh`);
    const goLines = text
      .split('\n')
      .flatMap((l, i) => (/\bgo (build|install)\b/.test(l) && !/^\s*#/.test(l) ? [i] : []));
    assert.ok(goLines.length > 0, `${script} builds with Go`);
    const lines = text.split('\n');
    let previous = 0;
    for (const at of goLines) {
      const between = lines.slice(previous, at);
      assert.ok(
        between.some((l) => /^\s*step "/.test(l)),
        `${script}: a step before line ${at + 1}: ${lines[at]?.trim()}`,
      );
      previous = at + 1;
    }
    assert.match(text, /progress_stop/, `${script} stops the ticker before its last lines`);
  }
});
