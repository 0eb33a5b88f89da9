// Argo CD's own test suite for the checks it bundles, run from the pinned release's module
// (scripts/health-scripts) through `impersync health`'s code path, table-driven: every case of every
// health_test.yaml, with no argocd-cm (the default library) and with the scripts supplied through an
// argocd-cm file. Every case that differs is listed; each must be one of the two differences
// docs/health.md explains, so a new Argo CD release shows any other at once.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { assessFiles, readSettings } from '../../src/cli/health.ts';
import type { CommandIO } from '../../src/cli/io.ts';
import { DEFAULT_BUDGET, HealthLibraries, LuaRunner } from '../../src/sync/index.ts';
import type { LuaRunResult } from '../../src/sync/health/lua/vm.ts';
import type { SuiteCase } from '../support/health-scripts.ts';
import { argocdCmOf, healthScriptsDir, suiteCases } from '../support/health-scripts.ts';
import { writeFiles } from './helpers.ts';

/** At least this many cases give Argo CD's status and message, both ways. */
const MIN_PASSING = 1110;

let dir: string;
let cases: SuiteCase[];
/** Records the most instructions any bundled check executed, to hold against the budget. */
class MeasuringRunner extends LuaRunner {
  most = 0;
  override async run(script: string, useOpenLibs: boolean, obj: unknown): Promise<LuaRunResult> {
    const r = await super.run(script, useOpenLibs, obj);
    this.most = Math.max(this.most, r.instructions ?? 0);
    return r;
  }
}
const runner = new MeasuringRunner();
// The default library read once, as one controller reads it, not once per case.
const libraries = new HealthLibraries();
before(() => {
  dir = healthScriptsDir();
  cases = suiteCases(dir);
});
after(() => runner.close());

const quiet: CommandIO = {
  stdout: () => {},
  stderr: () => {},
  readFile: (p) => readFile(p, 'utf8'),
  readStdin: async () => '',
};

interface Difference {
  line: string;
  /** Why it differs, when it is a difference docs/health.md explains. */
  why?: 'deletion' | 'duplicate key';
}

async function isDeleting(file: string): Promise<boolean> {
  return /^\s+deletionTimestamp:/m.test(await readFile(file, 'utf8'));
}

/** Each case that does not give Argo CD's status and message, with what impersync gave. */
async function differing(opts: {
  argocdCm?: string;
  settings?: Record<string, string>;
  defaultLibraryDir?: string | undefined;
}): Promise<Difference[]> {
  const out: Difference[] = [];
  for (const c of cases) {
    const r = await assessFiles({ files: [c.input], runner, libraries, io: quiet, ...opts });
    const got = !r.ok
      ? `refused: ${r.error}`
      : `${r.value[0]?.status ?? '(no health)'} ${JSON.stringify(r.value[0]?.message ?? '')}`;
    const want = `${c.status} ${JSON.stringify(c.message)}`;
    if (got === want) continue;
    const line = `${c.kind} ${c.inputPath}: want ${want}, got ${got}`;
    // Argo CD's suite runs the script alone; its controller (and `argocd admin settings
    // resource-overrides health`) first answers "Pending deletion" for an object being deleted.
    if (got === 'Progressing "Pending deletion"' && (await isDeleting(c.input))) out.push({ line, why: 'deletion' });
    else if (!r.ok && r.error.includes('Map keys must be unique (impersync refuses'))
      out.push({ line, why: 'duplicate key' });
    else out.push({ line });
  }
  return out;
}

function check(name: string, differences: Difference[]): void {
  const passing = cases.length - differences.length;
  const list = differences.map((d) => `  ${d.why ? `[${d.why}] ` : '[unexplained] '}${d.line}\n`).join('');
  process.stderr.write(`${name}: ${passing} of ${cases.length} cases pass\n${list}`);
  assert.ok(cases.length >= MIN_PASSING, `only ${cases.length} cases found in ${dir}`);
  assert.ok(passing >= MIN_PASSING, `${name}: ${passing} of ${cases.length} pass; differing:\n${list}`);
  const unexplained = differences.filter((d) => !d.why).map((d) => d.line);
  assert.deepEqual(unexplained, [], `${name}: differences docs/health.md does not explain`);
}

test("with no argocd-cm, the default library gives Argo CD's status and message on its own suite", async () => {
  check('default library', await differing({ defaultLibraryDir: dir }));
});

test('with the scripts supplied through an argocd-cm file (and no default library), the same', async () => {
  const file = writeFiles({ 'argocd-cm.yaml': argocdCmOf(dir) })['argocd-cm.yaml'] as string;
  // Read once as --argocd-cm reads it, not once per case: the file holds every script.
  const settings = await readSettings(file, quiet);
  assert.ok(settings.ok, settings.ok ? '' : settings.error);
  check('argocd-cm', await differing({ argocdCm: file, settings: settings.value, defaultLibraryDir: undefined }));
});

test('no bundled check comes near the instruction budget: a busy machine cannot make one fail', () => {
  assert.ok(runner.most > 0, 'no case reported the instructions it executed');
  process.stderr.write(
    `the costliest case executed about ${runner.most} instructions of ${DEFAULT_BUDGET.instructions}\n`,
  );
  assert.ok(runner.most * 1000 <= DEFAULT_BUDGET.instructions, `${runner.most} instructions`);
});
