// Where explain and validate get their objects: the -f files (or stdin), or the live cluster.
import { readDocuments, type Loaded } from './documents.ts';
import { buildInventory, type Inventory } from './inventory.ts';
import type { CommandIO } from './io.ts';
import { loadLiveInventory } from './live.ts';

export interface InputChoice {
  files: string[];
  namespace: string;
  kubeconfig?: string | undefined;
  context?: string | undefined;
  /** For explain's --app NAMESPACE/NAME: list Applications there in live mode. */
  applicationNamespace?: string | undefined;
}

export interface LoadedInput {
  inventory: Inventory;
  /** Words for messages: `a.yaml, b.yaml` or `namespace argocd of the current cluster`. */
  source: string;
}

export async function loadInput(
  choice: InputChoice,
  io: Pick<CommandIO, 'readFile' | 'readStdin'>,
): Promise<Loaded<LoadedInput>> {
  if (choice.files.length === 0) {
    const live = await loadLiveInventory(choice);
    if (!live.ok) return live;
    return {
      ok: true,
      value: { inventory: live.value, source: `namespace ${choice.namespace} of the kubeconfig's cluster` },
    };
  }
  const docs = await readDocuments(choice.files, io);
  if (!docs.ok) return docs;
  const inventory = buildInventory(docs.value);
  if (!inventory.ok) return inventory;
  return {
    ok: true,
    value: { inventory: inventory.value, source: choice.files.map((f) => (f === '-' ? '<stdin>' : f)).join(', ') },
  };
}

/** The flags explain and validate share. */
export const INPUT_FLAGS = {
  filename: { type: 'string', short: 'f', multiple: true },
  output: { type: 'string', short: 'o' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const DEFAULT_CONTROL_NAMESPACE = 'argocd';
