// What the two guards kustomize runs as its git and its helm (git-guard.ts, helm-guard.ts) share:
// the refusal they throw, and how one ends as a process (the message on stderr, which kustomize
// puts in its error, and exit status 1).

/** A command the guard does not let through. */
export class Refused extends Error {}

/** Runs the guard on this process's arguments and exits with its status, or 1 and a message. */
export async function runGuard(guard: (argv: string[]) => Promise<number>): Promise<void> {
  try {
    process.exitCode = await guard(process.argv.slice(2));
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`${err instanceof Refused ? 'refused by the renderer: ' : ''}${message}\n`);
    process.exitCode = 1;
  }
}
