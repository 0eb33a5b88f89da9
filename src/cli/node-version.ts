// The Node.js the `impersync` command needs. Imports nothing, so that src/cli/main.ts can check it
// before any module that needs Node 24 is loaded (undici, for one, fails on Node 20 at import with
// "Cannot read properties of undefined (reading 'bind')").

/** The major version package.json's `engines` and the pinned `node` dev dependency ask for. */
export const NEEDED_NODE_MAJOR = 24;

/** The one line to print when `version` (as in process.versions.node) is too old; undefined when it will do. */
export function nodeVersionProblem(version: string): string | undefined {
  const major = Number.parseInt(version.replace(/^v/, ''), 10);
  if (Number.isInteger(major) && major >= NEEDED_NODE_MAJOR) return undefined;
  return (
    `impersync needs Node.js ${NEEDED_NODE_MAJOR} (this is ${version}): run it through the npm scripts ` +
    `(npm start, npm test) or \`npx impersync\` in its checkout, which use the Node.js ${NEEDED_NODE_MAJOR} ` +
    `pinned in package.json, or switch this shell with \`nvm install ${NEEDED_NODE_MAJOR} && nvm use ${NEEDED_NODE_MAJOR}\``
  );
}
