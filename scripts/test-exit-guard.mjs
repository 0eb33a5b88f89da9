// Preloaded into every test file's process by scripts/run-tests.mjs (--import). Its after hook is
// the first the file's root runs, once the file's tests are done: from then a file that still holds
// a timer or a socket open a minute later (a prober left running on a failure path) exits instead
// of holding the run until its deadline. The file's own after hooks run within that minute (a
// control plane stops in seconds); a file that exits by itself is not delayed (the timer is unref'd).
//
// It stands in for --test-force-exit, which loses results: under process isolation it exits a
// file's process before the runner has read the verdicts of its last tests, and the run reports
// fewer tests than ran, with exit code 0 even when one of the lost ones failed (nodejs/node#64833;
// seen here as the last 19 tests of test/controller/operation-machine.test.ts missing from a CI run).
import { after } from 'node:test';

const GRACE_MS = 60_000;

after(() => {
  setTimeout(() => {
    process.stderr.write(
      `test-exit-guard: ${process.argv[1] ?? 'a test file'} left handles open ${GRACE_MS / 1000} s after its tests; exiting\n`,
    );
    process.exit();
  }, GRACE_MS).unref();
});
