// The Lua VM health scripts run in: the environment Argo CD's scripts see (obj, the libraries it
// opens or withholds, Lua 5.1's names and number printing), what no script may reach whatever it is
// given, and the time and memory budgets.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { LuaRunner } from '../../src/sync/health/index.ts';

const runner = new LuaRunner({ instructions: 2_000_000, timeoutMs: 5000, memoryBytes: 8 << 20 });
after(() => runner.close());

const obj = {
  apiVersion: 'cert-manager.io/v1',
  kind: 'Certificate',
  metadata: { name: 'web', namespace: 'shop', labels: { tier: 'front' } },
  spec: { replicas: 3, ratio: 2.5, dnsNames: ['a.example', 'b.example'] },
  status: { conditions: [{ type: 'Ready', status: 'True', message: 'certificate is up to date' }] },
};

async function value(script: string, openLibs = false): Promise<unknown> {
  const r = await runner.run(`return { status = "Healthy", message = (function() ${script} end)() }`, openLibs, obj);
  assert.ok(r.ok, `script failed: ${r.ok ? '' : r.error}`);
  return (r.value as { message?: unknown }).message;
}

async function failure(script: string, openLibs = false): Promise<string> {
  const r = await runner.run(script, openLibs, obj);
  assert.equal(r.ok, false, `expected the script to fail: ${script}`);
  return r.ok ? '' : r.error;
}

test('obj is the live object: maps and lists are tables (lists from 1), whole numbers print as in Lua 5.1', async () => {
  assert.equal(await value('return obj.metadata.name .. "/" .. obj.metadata.labels.tier'), 'web/front');
  assert.equal(await value('return obj.spec.dnsNames[2] .. " " .. #obj.spec.dnsNames'), 'b.example 2');
  assert.equal(await value('return tostring(obj.spec.replicas) .. " " .. tostring(obj.spec.ratio)'), '3 2.5');
  assert.equal(await value('return tostring(obj.spec.replicas / 3)'), '1', 'an integral float prints as 5.1 does');
  assert.equal(await value('return tostring(obj.status.missing)'), 'nil');
});

test('without useOpenLibs: base, table, require of os, os.time and os.date; no string, math, io, debug, coroutine', async () => {
  assert.equal(
    await value('return type(string) .. type(math) .. type(io) .. type(debug) .. type(coroutine) .. type(utf8)'),
    'nilnilnilnilnilnil',
  );
  assert.equal(
    await value('return type(os.time()) .. type(os.date) .. type(os.exit) .. type(os.getenv)'),
    'numberfunctionnilnil',
  );
  assert.equal(await value('local os2 = require("os") return type(os2.date)'), 'function');
  assert.equal(
    await value('return type(table.insert) .. type(pairs) .. type(pcall) .. type(setmetatable)'),
    'functionfunctionfunctionfunction',
  );
  assert.equal(await value('return type(dofile) .. type(loadfile)'), 'nilnil');
  assert.match(await failure('return obj.metadata.name:upper()'), /attempt to index a string value/);
  assert.match(await failure('return require("string")'), /module 'string' not found/);
  // Arithmetic on numeric strings still works, as in Lua 5.1.
  assert.equal(await value('return tostring("2" + 1)'), '3');
});

test('Lua 5.1 names Argo CD scripts use are there: unpack, table.getn, table.maxn, loadstring', async () => {
  assert.equal(await value('local a, b = unpack({ "x", "y" }) return a .. b'), 'xy');
  assert.equal(await value('return tostring(table.getn(obj.spec.dnsNames))'), '2');
  assert.equal(await value('return tostring(table.maxn({ [1] = 1, [7] = 1 }))'), '7');
  assert.equal(await value('return loadstring("return 40 + 2")()'), 42);
});

test('with useOpenLibs: string, math and the rest are there, with 5.1 names; the host is still out of reach', async () => {
  assert.equal(await value('return string.upper(obj.metadata.name) .. tostring(math.floor(2.7))', true), 'WEB2');
  assert.equal(await value('return obj.metadata.name:sub(1, 2)', true), 'we');
  assert.equal(await value('return tostring(math.pow(2, 10))', true), '1024');
  assert.equal(
    await value('local ok, err = pcall(os.execute, "id") return err', true),
    "os.execute is not available in impersync's Lua sandbox",
  );
  assert.equal(
    await value('local ok, err = pcall(os.exit, 1) return err', true),
    "os.exit is not available in impersync's Lua sandbox",
  );
  assert.equal(await value('return tostring(os.getenv("HOME"))', true), 'nil');
  assert.equal(
    await value('local ok, err = pcall(io.open, "/etc/passwd") return err', true),
    "io.open is not available in impersync's Lua sandbox",
  );
  assert.equal(
    await value('local ok, err = pcall(io.popen, "id") return err', true),
    "io.popen is not available in impersync's Lua sandbox",
  );
  assert.equal(
    await value('local f = loadfile("/etc/passwd") return tostring(f)', true),
    'nil',
    'no host file is visible',
  );
  assert.equal(await value('return tostring(require("os") == os)', true), 'true');
});

test('bytecode cannot be loaded, so a script cannot corrupt the VM it runs in', async () => {
  assert.equal(
    await value('local f, err = load(string.dump(function() return 1 end)) return err', true),
    "attempt to load a binary chunk (mode is 't')",
  );
  assert.equal(
    await value('local f, err = load(string.dump(function() return 1 end), "x", "b") return err', true),
    "attempt to load a binary chunk (mode is 't')",
  );
});

test('nothing a run leaves behind reaches the next one', async () => {
  await runner.run('leaked = "yes" hs = { status = "Healthy" } return hs', false, obj);
  assert.equal(await value('return tostring(leaked)'), 'nil');
});

test('time budget: a script past its instruction budget stops with gopher-lua words, the line it was at and why', async () => {
  const why = 'context deadline exceeded (the script ran past its budget of 2000000 Lua instructions)';
  assert.equal(await failure('local n = 0\nwhile true do n = n + 1 end'), `<string>:2: ${why}`);
  assert.equal(await failure('local ok = pcall(debug.sethook) while true do end', true), `<string>:1: ${why}`);
  // A coroutine runs under the same hook (coroutine.wrap adds its own position in front).
  assert.match(
    await failure('local co = coroutine.wrap(function() while true do end end) co()', true),
    /^<string>:1: .*context deadline exceeded \(the script ran past its budget of 2000000 Lua instructions\)$/,
  );
  // Work under the budget completes, however long the machine takes to do it.
  assert.equal(await value('local n = 0 for i = 1, 500000 do n = n + 1 end return tostring(n)'), '500000');
});

test('time budget: the budget is work, not wall time: a slow run under it completes', async () => {
  // 1 ms of wall time is far less than the loop takes: only the (generous) instruction count applies
  // until the wall-time backstop, which the hook checks too.
  const slow = new LuaRunner({ instructions: 50_000_000, timeoutMs: 60_000, memoryBytes: 8 << 20 });
  after(() => slow.close());
  const r = await slow.run('local n = 0 for i = 1, 3000000 do n = n + 1 end return { status = "Healthy" }', false, obj);
  assert.ok(r.ok, r.ok ? '' : r.error);
  assert.ok((r.instructions ?? 0) >= 3_000_000, `counted ${r.instructions}`);
  const backstop = new LuaRunner({ instructions: 1e12, timeoutMs: 200, memoryBytes: 8 << 20 });
  after(() => backstop.close());
  const stopped = await backstop.run('while true do end', false, obj);
  assert.equal(
    stopped.ok ? '' : stopped.error,
    '<string>:1: context deadline exceeded (the script ran past its budget of 0.2 s)',
  );
});

test('time budget: a run stuck inside one library call is ended from outside, and the next run works', async () => {
  const stuck =
    'local s = string.rep("a", 40) return string.find(s .. "b", string.rep("a?", 40) .. string.rep("a", 40))';
  const short = new LuaRunner({ instructions: 1_000_000, timeoutMs: 300, memoryBytes: 8 << 20 });
  after(() => short.close());
  const r = await short.run(stuck, true, obj);
  assert.equal(r.ok ? '' : r.error, 'context deadline exceeded (the script ran past its budget of 0.3 s)');
  const alive = await short.run('return { status = "Healthy", message = "alive" }', false, obj);
  assert.deepEqual(alive.ok && alive.value, { status: 'Healthy', message: 'alive' });
});

test('memory budget: allocations past it fail with "not enough memory"; the next run starts afresh', async () => {
  assert.equal(await failure('local t = {} for i = 1, 1e8 do t[i] = i end'), 'not enough memory');
  assert.equal(await failure('return string.rep("x", 64 * 1024 * 1024)', true), 'not enough memory');
  assert.equal(await value('local t = {} for i = 1, 1000 do t[i] = i end return tostring(#t)'), '1000');
});

test('a script failure is the message Argo CD shows: position and text of the error', async () => {
  assert.equal(await failure('error("certificate expired")'), '<string>:1: certificate expired');
  assert.match(await failure('local x = obj.status.nothing.deeper'), /^<string>:1: attempt to index a nil value/);
  assert.match(await failure('return {'), /^<string>:1: /);
});

test('print output is kept with the run (for impersync health), never written to the process output', async () => {
  const r = await runner.run('print("checking", obj.metadata.name, 2.0) io.write("x") return nil', true, obj);
  assert.deepEqual(r.printed, ['checking\tweb\t2', 'x']);
});
