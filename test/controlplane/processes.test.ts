// Process groups started for the control plane never outlive the process that started them:
// stop(), normal exit, a crash, SIGINT, SIGTERM and SIGKILL all leave nothing behind.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { eventually, isAlive as alive } from '../support/procfs.ts';

const child = fileURLToPath(new URL('./fixtures/hold-processes.ts', import.meta.url));

/** Every process in the given process groups (the leaders' pids), from /proc. */
function groupMembers(groups: number[]): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (groups.includes(Number(fields[2]))) members.push(pid);
    } catch {
      // exited meanwhile
    }
  }
  return members;
}

async function run(mode: string): Promise<{
  child: ReturnType<typeof spawn>;
  report: { pids: number[]; watchdog: number };
  members: number[];
  lines: string[];
  exited: Promise<number | null>;
}> {
  const proc = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', child, mode], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let buffer = '';
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const first = new Promise<string>((resolve, reject) => {
    proc.stdout.setEncoding('utf8').on('data', (d: string) => {
      buffer += d;
      const parts = buffer.split('\n');
      buffer = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        if (lines.length === 1) resolve(line);
      }
    });
    proc.on('exit', (code) => reject(new Error(`child exited (${code}) before reporting its pids`)));
  });
  const report = JSON.parse(await first) as { pids: number[]; watchdog: number };
  const members = groupMembers(report.pids);
  return { child: proc, report, members, lines, exited };
}

for (const signal of ['SIGKILL', 'SIGTERM', 'SIGINT'] as const) {
  test(`a ${signal} to the starting process ends its process groups, grandchildren included`, async () => {
    const { child: proc, report, members } = await run('wait');
    assert.ok(members.length >= 3, `expected the two leaders and the grandchild, found ${members.join(',')}`);
    assert.ok(report.pids.every(alive));
    proc.kill(signal);
    await eventually(`${members.join(',')} to end after ${signal}`, () => members.every((pid) => !alive(pid)));
    await eventually('the watchdog to end', () => !alive(report.watchdog));
  });
}

test('a normal exit without stop() ends the process groups', async () => {
  const { report, members, exited } = await run('exit');
  assert.equal(await exited, 0);
  await eventually(`${members.join(',')} to end after exit`, () => members.every((pid) => !alive(pid)));
  await eventually('the watchdog to end', () => !alive(report.watchdog));
});

test('a crash ends the process groups', async () => {
  const { members, exited } = await run('throw');
  assert.notEqual(await exited, 0);
  await eventually(`${members.join(',')} to end after the crash`, () => members.every((pid) => !alive(pid)));
});

test('stop() ends each group with SIGTERM and reports how the leader exited', async () => {
  const { members, lines, exited } = await run('stop');
  assert.equal(await exited, 0);
  const { exits } = JSON.parse(lines[1] ?? '{}') as { exits: { code: number | null; signal: string | null }[] };
  assert.deepEqual(
    exits.map((e) => e.signal),
    ['SIGTERM', 'SIGTERM'],
  );
  await eventually(`${members.join(',')} to end`, () => members.every((pid) => !alive(pid)));
});
