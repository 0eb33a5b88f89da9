// A set of field paths, as structured-merge-diff's fieldpath.Set: a tree whose nodes hold the
// paths that end there (members) and the subtrees beneath (children). The empty path is never a
// member (nobody owns "the whole object"). Also the managedFields FieldsV1 reader.
import type { Path, PathElement } from './path.ts';
import { elementKey, parseElementKey } from './path.ts';

export class FieldSet {
  readonly members = new Map<string, PathElement>();
  readonly children = new Map<string, { pe: PathElement; set: FieldSet }>();

  #self(): FieldSet {
    return this;
  }

  insert(p: Path): void {
    if (p.length === 0) return;
    let s = this.#self();
    for (let i = 0; i < p.length - 1; i++) {
      const pe = p[i] as PathElement;
      const k = elementKey(pe);
      let c = s.children.get(k);
      if (!c) {
        c = { pe, set: new FieldSet() };
        s.children.set(k, c);
      }
      s = c.set;
    }
    const last = p[p.length - 1] as PathElement;
    s.members.set(elementKey(last), last);
  }

  has(p: Path): boolean {
    if (p.length === 0) return false;
    let s: FieldSet | undefined = this.#self();
    for (let i = 0; i < p.length - 1; i++) {
      s = s.children.get(elementKey(p[i] as PathElement))?.set;
      if (!s) return false;
    }
    return s.members.has(elementKey(p[p.length - 1] as PathElement));
  }

  empty(): boolean {
    if (this.members.size > 0) return false;
    for (const c of this.children.values()) if (!c.set.empty()) return false;
    return true;
  }

  /** The paths beneath `pe` (not `pe` itself), without it. */
  withPrefix(pe: PathElement): FieldSet {
    return this.children.get(elementKey(pe))?.set ?? new FieldSet();
  }

  union(o: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [k, pe] of this.members) out.members.set(k, pe);
    for (const [k, pe] of o.members) out.members.set(k, pe);
    for (const [k, c] of this.children) {
      const other = o.children.get(k);
      out.children.set(k, { pe: c.pe, set: other ? c.set.union(other.set) : c.set });
    }
    for (const [k, c] of o.children) if (!this.children.has(k)) out.children.set(k, c);
    return out;
  }

  difference(o: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [k, pe] of this.members) if (!o.members.has(k)) out.members.set(k, pe);
    for (const [k, c] of this.children) {
      const other = o.children.get(k);
      if (!other) out.children.set(k, c);
      else {
        const d = c.set.difference(other.set);
        if (!d.empty()) out.children.set(k, { pe: c.pe, set: d });
      }
    }
    return out;
  }

  /** Every path, members of a node before those of its children. */
  *paths(prefix: PathElement[] = []): Generator<Path> {
    for (const pe of this.members.values()) yield [...prefix, pe];
    for (const c of this.children.values()) yield* c.set.paths([...prefix, c.pe]);
  }

  static of(paths: Iterable<Path>): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.insert(p);
    return s;
  }
}

/**
 * A managedFields entry's `fieldsV1` as a set: each key an element (`.` marks the enclosing path
 * itself), an object with no known keys a leaf. Keys of an unknown kind are dropped, as
 * structured-merge-diff drops them; a malformed key is an error.
 */
export function fieldSetFromFieldsV1(fields: unknown): FieldSet {
  const out = new FieldSet();
  const walk = (node: unknown, prefix: PathElement[], depth: number): boolean => {
    if (depth > 256) throw new Error('fieldsV1 nested too deeply');
    let member = false;
    let any = false;
    if (node !== null && typeof node === 'object' && !Array.isArray(node)) {
      for (const [k, child] of Object.entries(node)) {
        if (k === '.') {
          member = true;
          continue;
        }
        const pe = parseElementKey(k);
        if (pe === null) continue;
        any = true;
        const path = [...prefix, pe];
        if (walk(child, path, depth + 1)) out.insert(path);
      }
    }
    return member || !any;
  };
  walk(fields ?? {}, [], 0);
  return out;
}
