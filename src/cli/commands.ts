// The `impersync` subcommands: one module each, loaded when asked for. Each module exports
// `main(argv: string[]): Promise<number>` and returns the process exit code.

type Command = { summary: string; load: () => Promise<{ main: (argv: string[]) => Promise<number> }> };

const commands: Record<string, Command> = {
  run: {
    summary: 'run the controller (a local control plane and the examples when no cluster is given)',
    load: () => import('./run.ts'),
  },
  explain: {
    summary: 'show which ServiceAccount an Application syncs as, and why',
    load: () => import('./explain.ts'),
  },
  validate: { summary: "check AppProjects' destinationServiceAccounts", load: () => import('./validate.ts') },
  health: {
    summary: 'assess the health of objects in files as the controller would (Lua checks included)',
    load: () => import('./health.ts'),
  },
  diff: {
    summary: "compare an Application's desired and live state, as its identity",
    load: () => import('./diff.ts'),
  },
  renderer: {
    summary: 'render sources for the controller, in a process without Kubernetes credentials',
    load: () => import('./renderer.ts'),
  },
  cluster: {
    summary: 'start a local etcd + kube-apiserver + kube-controller-manager',
    load: () => import('./cluster.ts'),
  },
};

export function usage(): string {
  const width = Math.max(...Object.keys(commands).map((c) => c.length));
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return [
    'usage: impersync <command> [flags]',
    '',
    'commands:',
    ...lines,
    '',
    "Run 'impersync <command> --help' for a command's flags.",
  ].join('\n');
}

export async function dispatch(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    process.stdout.write(usage() + '\n');
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === 'version') {
    process.stdout.write((await import('./version.ts')).versionText());
    return 0;
  }
  const command = commands[name];
  if (!command) {
    process.stderr.write(`impersync: unknown command '${name}'\n${usage()}\n`);
    return 2;
  }
  const mod = await command.load();
  return mod.main(rest);
}
