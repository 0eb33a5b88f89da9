// Placeholder until its issue lands; replaced by the real command.
export async function main(_argv: string[]): Promise<number> {
  process.stderr.write('impersync diff: not built yet\n');
  return 2;
}
