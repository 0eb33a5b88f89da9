// Bounds on what one YAML document may become, checked on its syntax tree before anything is
// built from it: duplicate keys found in one pass (a set per map, not the parser's pairwise
// check, which is quadratic: 88,000 keys took 85 s), and aliases measured by what they expand to
// (every node and every scalar's characters counted at each use), not by how many there are. An
// alias is then replaced by the node it names, so building the value resolves no alias (the
// parser's own resolution scans every anchor for each alias: quadratic again).
import { isAlias, isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';

export interface DocumentLimits {
  /** Most characters a document may hold, or expand to through its aliases. */
  maxDocumentBytes: number;
  /** Most nodes (scalars, maps, lists) a document may expand to through its aliases. */
  maxDocumentNodes: number;
}

export const DEFAULT_DOCUMENT_LIMITS: DocumentLimits = {
  maxDocumentBytes: 16 * 1024 * 1024,
  maxDocumentNodes: 1_000_000,
};

/** What a document's check found wrong; `line` is 1-based, when it points at one place. */
export type ExpansionProblem =
  | { kind: 'duplicate'; line: number | undefined }
  | { kind: 'recursive'; anchor: string }
  | { kind: 'unresolved'; anchor: string }
  | { kind: 'nodes'; nodes: number }
  | { kind: 'bytes'; bytes: number };

interface Size {
  nodes: number;
  bytes: number;
}

/** Thrown inside the walk to stop it at the first problem. */
class Stop {
  readonly problem: ExpansionProblem;
  constructor(problem: ExpansionProblem) {
    this.problem = problem;
  }
}

// Counted as an alias expands: in progress while its own children are measured (an alias to it
// from inside is a cycle), then its size.
const IN_PROGRESS: Size = { nodes: -1, bytes: -1 };

/**
 * Checks `doc` against `limits` and replaces its aliases by the nodes they name; the problem, or
 * undefined when the document may be built. Anchors resolve as YAML says and the parser does: to
 * the last node with that anchor before the alias, in document order.
 */
export function checkAndExpand(
  doc: Document,
  limits: DocumentLimits,
  lines: LineCounter,
): ExpansionProblem | undefined {
  const anchors = new Map<string, Node>();
  const sizes = new Map<Node, Size>();
  let nodes = 0;
  let bytes = 0;
  const add = (s: Size): void => {
    nodes += s.nodes;
    bytes += s.bytes;
    if (nodes > limits.maxDocumentNodes) throw new Stop({ kind: 'nodes', nodes });
    if (bytes > limits.maxDocumentBytes) throw new Stop({ kind: 'bytes', bytes });
  };

  // Measures `node` and returns what takes its place: the node itself, or an alias's target.
  const expand = (node: unknown): unknown => {
    if (isAlias(node)) {
      const target = anchors.get(node.source);
      if (!target) throw new Stop({ kind: 'unresolved', anchor: node.source });
      // A target is registered before its children are walked, so it is measured or in progress.
      const size = sizes.get(target) ?? IN_PROGRESS;
      if (size === IN_PROGRESS) throw new Stop({ kind: 'recursive', anchor: node.source });
      add(size);
      return target;
    }
    if (!node || typeof node !== 'object') return node;
    const n = node as Node;
    if (n.anchor) anchors.set(n.anchor, n);
    const before = { nodes, bytes };
    sizes.set(n, IN_PROGRESS);
    add({ nodes: 1, bytes: isScalar(n) ? scalarLength(n.value) : 1 });
    if (isMap(n)) {
      const seen = new Set<unknown>();
      for (const pair of n.items) {
        const key = pair.key;
        if (isScalar(key) && !(typeof key.value === 'number' && Number.isNaN(key.value))) {
          // The parser's rule: scalar keys with the same value (===) are duplicates; merge keys
          // are each a symbol of their own, so `<<` may repeat.
          if (seen.has(key.value)) throw new Stop({ kind: 'duplicate', line: lineOf(lines, key.range?.[0]) });
          seen.add(key.value);
        }
        pair.key = expand(key);
        pair.value = expand(pair.value);
      }
    } else if (isSeq(n)) {
      n.items = n.items.map(expand);
    } else if (isPair(n)) {
      n.key = expand(n.key);
      n.value = expand(n.value);
    }
    sizes.set(n, { nodes: nodes - before.nodes, bytes: bytes - before.bytes });
    return n;
  };

  try {
    doc.contents = expand(doc.contents) as typeof doc.contents;
    return undefined;
  } catch (err) {
    if (err instanceof Stop) return err.problem;
    throw err;
  }
}

function scalarLength(value: unknown): number {
  if (typeof value === 'string') return value.length;
  return 8;
}

function lineOf(lines: LineCounter, offset: number | undefined): number | undefined {
  return offset === undefined ? undefined : lines.linePos(offset).line;
}
