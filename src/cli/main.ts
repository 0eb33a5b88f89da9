#!/usr/bin/env node
// The `impersync` command (package.json `bin`, `npm start`, the image's entrypoint). It checks the
// Node.js version before anything else: static imports are evaluated before a module's body, so
// this file imports only the check, and the commands (and undici with them) load afterwards.
import { nodeVersionProblem } from './node-version.ts';

const problem = nodeVersionProblem(process.versions.node);
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exitCode = 2;
} else {
  import('./commands.ts')
    .then(({ dispatch }) => dispatch(process.argv.slice(2)))
    .then(
      (code) => {
        process.exitCode = code;
      },
      (err: unknown) => {
        process.stderr.write(`impersync: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exitCode = 1;
      },
    );
}
