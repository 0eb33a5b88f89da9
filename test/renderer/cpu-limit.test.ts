// The renderer's default of renders at once: one per CPU it may use, read from cgroup v2's cpu.max
// (the container's CPU limit) or the machine's, at least two and at most four.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { cpuLimit, defaultMaxRenders } from '../../src/renderer/cpu-limit.ts';

async function cgroup(text: string): Promise<string> {
  const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'impersync-cpu-')), 'cpu.max');
  await writeFile(file, text);
  return file;
}

test("cpu.max: the quota over the period, rounded up, never more than the machine's; 'max' or no file is the machine's", async () => {
  assert.deepEqual(cpuLimit({ cgroupFile: await cgroup('150000 100000\n'), available: 8 }).cpus, 2);
  assert.deepEqual(cpuLimit({ cgroupFile: await cgroup('50000 100000\n'), available: 8 }).cpus, 1);
  assert.deepEqual(cpuLimit({ cgroupFile: await cgroup('1600000 100000\n'), available: 8 }).cpus, 8);
  const none = cpuLimit({ cgroupFile: await cgroup('max 100000\n'), available: 6 });
  assert.deepEqual(none, { cpus: 6, from: 'the CPUs this machine has (no limit found)' });
  assert.equal(cpuLimit({ cgroupFile: '/nonexistent/cpu.max', available: 3 }).cpus, 3);
  const file = await cgroup('300000 100000');
  assert.deepEqual(cpuLimit({ cgroupFile: file, available: 8 }), { cpus: 3, from: file });
});

test('renders at once by default: one per CPU, at least two, at most four', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 16].map((n) => defaultMaxRenders(n)),
    [2, 2, 3, 4, 4],
  );
});
