// Argo CD's removeWebhookMutation (gitops-engine pkg/diff, v3.6.1): with ServerSideDiff and without
// IncludeMutationWebhook=true, what mutating admission webhooks change is left out of the
// dry-run's answer. The answer keeps the fields its own field manager owns there (less any path a
// field it owns lies beneath, and never a field of an associative list's composite key); that
// is merged onto the live object with the schema's list and map semantics, so every other field
// takes its live value, a webhook's change included; then what the apply removed from live (and
// the manager owned there) is removed again. The schema is the destination's OpenAPI v3 for the
// object's group-version (sync/smd/schema.ts).
import type { KubeObject } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import type { DestinationClient, OpenApiDocument } from '../kube/types.ts';
import type { Path, Value } from './smd/path.ts';
import type { Schema, TypeRef } from './smd/schema.ts';
import { gvkString, schemaFromOpenApiV3 } from './smd/schema.ts';
import { FieldSet, fieldSetFromFieldsV1 } from './smd/set.ts';
import { listItemElement, merge, removedFields, removeItems, SmdError, toFieldSet, validate } from './smd/typed.ts';
import { elementKey } from './smd/path.ts';
import { resolve } from './smd/schema.ts';

/** Schemas built from documents, per document (a new hash is a new document object). */
const built = new WeakMap<OpenApiDocument, Schema | Error>();

function schemaOf(doc: OpenApiDocument): Schema | Error {
  let s = built.get(doc);
  if (!s) {
    try {
      s = schemaFromOpenApiV3(doc.document);
    } catch (e) {
      s = e instanceof Error ? e : new Error(String(e));
    }
    built.set(doc, s);
  }
  return s;
}

function gvkOf(o: KubeObject): string {
  const slash = o.apiVersion.indexOf('/');
  return gvkString(groupOf(o.apiVersion), slash < 0 ? o.apiVersion : o.apiVersion.slice(slash + 1), o.kind);
}

export type SchemaLookup = { type: TypeRef; schema: Schema } | { error: string };

/** The schema of `o`'s kind on the destination, or why there is none (Argo CD's words first). */
export async function schemaFor(client: DestinationClient, o: KubeObject): Promise<SchemaLookup> {
  const unresolved = `unable to resolve parseableType for GroupVersionKind: ${gvkOf(o)}`;
  const doc = await client.openApiV3(o.apiVersion);
  if (!doc.ok)
    return { error: doc.error.code === 404 ? unresolved : `${unresolved} (OpenAPI v3: ${doc.error.message})` };
  const schema = schemaOf(doc.value);
  if (schema instanceof Error) return { error: `${unresolved} (OpenAPI v3: ${schema.message})` };
  const name = schema.gvks.get(gvkOf(o));
  return name === undefined ? { error: unresolved } : { type: { named: name }, schema };
}

interface ManagedFieldsEntry {
  manager?: unknown;
  fieldsV1?: unknown;
}

function managedFieldsOf(o: KubeObject): ManagedFieldsEntry[] {
  const mf = (o.metadata as { managedFields?: unknown }).managedFields;
  return Array.isArray(mf) ? (mf as ManagedFieldsEntry[]) : [];
}

/** managerFieldSet: the union of what `manager` owns across its entries. */
function managerFieldSet(entries: ManagedFieldsEntry[], manager: string): FieldSet {
  let out = new FieldSet();
  for (const e of entries) {
    if (e.manager !== manager) continue;
    try {
      out = out.union(fieldSetFromFieldsV1(e.fieldsV1));
    } catch (err) {
      throw new Error(`error building managedFields set: ${(err as Error).message}`, { cause: err });
    }
  }
  return out;
}

/** excludeManagerOwnedAncestors: drop each path beneath which the manager owns something. */
function excludeOwnedAncestors(toRemove: FieldSet, owned: FieldSet): FieldSet {
  const out = new FieldSet();
  for (const p of toRemove.paths()) {
    let sub = owned;
    for (const pe of p) {
      sub = sub.withPrefix(pe);
      if (sub.empty()) break;
    }
    if (sub.empty()) out.insert(p);
  }
  return out;
}

/** filterOutCompositeKeyFields: a field named by an enclosing composite (multi-field) key stays. */
function withoutCompositeKeyFields(s: FieldSet): FieldSet {
  const out = new FieldSet();
  for (const p of s.paths()) if (!isCompositeKeyField(p)) out.insert(p);
  return out;
}

function isCompositeKeyField(p: Path): boolean {
  const last = p[p.length - 1];
  if (!last || !('field' in last)) return false;
  for (let i = p.length - 2; i >= 0; i--) {
    const pe = p[i];
    if (pe && 'key' in pe && pe.key.length > 1 && pe.key.some(([name]) => name === last.field)) return true;
  }
  return false;
}

/**
 * The API groups of client-go's scheme (k8s.io/client-go/kubernetes/scheme, v0.37), whose kinds
 * gitops-engine's remarshal reads into their Go type after removeWebhookMutation; custom
 * resources (and CustomResourceDefinitions, not in that scheme) it leaves as they are.
 */
const SCHEME_GROUPS = new Set([
  '',
  'admissionregistration.k8s.io',
  'internal.apiserver.k8s.io',
  'apps',
  'authentication.k8s.io',
  'authorization.k8s.io',
  'autoscaling',
  'batch',
  'certificates.k8s.io',
  'coordination.k8s.io',
  'discovery.k8s.io',
  'events.k8s.io',
  'extensions',
  'flowcontrol.apiserver.k8s.io',
  'networking.k8s.io',
  'node.k8s.io',
  'policy',
  'rbac.authorization.k8s.io',
  'resource.k8s.io',
  'scheduling.k8s.io',
  'storage.k8s.io',
  'storagemigration.k8s.io',
]);

const asMap = (v: Value | undefined): Record<string, Value> | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? v : undefined;

/**
 * What remarshal does to the nulls the removal leaves (a map or list emptied of every field):
 * the Go type's omitempty fields drop them. A null that the dry-run's answer or live had at that
 * place is the server's and stays, as it does through the Go type and RemoveMapFields.
 */
function withoutRemovalNulls(schema: Schema, tr: TypeRef, out: Value, predicted: Value, live: Value): Value {
  const walk = (tr: TypeRef | undefined, o: Value, p: Value | undefined, l: Value | undefined): Value => {
    const atom = resolve(schema, tr ?? {});
    if (!atom) return o;
    const m = asMap(o);
    if (m && atom.map && atom.map.relationship !== 'atomic') {
      const res: Record<string, Value> = {};
      for (const [k, v] of Object.entries(m)) {
        const pv = asMap(p)?.[k];
        const lv = asMap(l)?.[k];
        if (v === null && pv !== null && lv !== null) continue;
        res[k] = walk(atom.map.fields.get(k)?.type ?? atom.map.elementType, v, pv, lv);
      }
      return res;
    }
    const list = atom.list;
    if (Array.isArray(o) && list && list.relationship === 'associative' && list.keys.length > 0) {
      const byKey = (xs: Value | undefined) => {
        const idx = new Map<string, Value>();
        for (const x of Array.isArray(xs) ? xs : []) {
          try {
            idx.set(elementKey(listItemElement(schema, list, x)), x);
          } catch {
            // an element without its key matches nothing
          }
        }
        return idx;
      };
      const pi = byKey(p);
      const li = byKey(l);
      return o.map((item) => {
        let k: string;
        try {
          k = elementKey(listItemElement(schema, list, item));
        } catch {
          return item;
        }
        return walk(list.elementType, item, pi.get(k), li.get(k));
      });
    }
    return o;
  };
  return walk(tr, out, predicted, live);
}

function typedOrThrow(lookup: { type: TypeRef; schema: Schema }, v: Value, what: string, gvk: string): void {
  const errs = validate(lookup.schema, lookup.type, v);
  if (errs.length)
    throw new Error(`error converting ${what} from unstructured to ${gvk}: ${new SmdError(errs).message}`);
}

/**
 * The dry-run's answer without what mutating webhooks changed. Throws with Argo CD's message
 * ("error removing non config mutations for resource K/N: ...") when it cannot be done.
 */
export function removeWebhookMutation(
  predicted: KubeObject,
  live: KubeObject,
  lookup: SchemaLookup,
  manager: string,
): KubeObject {
  const wrap = (msg: string) =>
    new Error(`error removing non config mutations for resource ${predicted.kind}/${predicted.metadata.name}: ${msg}`);
  try {
    const plManaged = managedFieldsOf(predicted);
    if (plManaged.length === 0)
      throw new Error(
        `predictedLive for resource ${predicted.kind}/${predicted.metadata.name} must have the managedFields`,
      );
    if ('error' in lookup) throw new Error(lookup.error);
    const { schema, type } = lookup;
    const gvk = gvkOf(predicted);
    const pv = predicted as unknown as Value;
    const lv = live as unknown as Value;
    typedOrThrow(lookup, pv, 'predicted live state', gvk);
    typedOrThrow(lookup, lv, 'live state', gvk);
    const owned = managerFieldSet(plManaged, manager);
    if (owned.empty()) throw new Error(`no managed fields found for manager: ${manager}`);
    let all: FieldSet;
    try {
      all = toFieldSet(schema, type, pv);
    } catch (e) {
      throw new Error(`error converting predicted live state to FieldSet: ${(e as Error).message}`, { cause: e });
    }
    let nonOwned = excludeOwnedAncestors(all.difference(owned), owned);
    let removed: FieldSet;
    try {
      removed = removedFields(schema, type, lv, pv);
    } catch (e) {
      throw new Error(`error comparing predicted resource to live resource: ${(e as Error).message}`, { cause: e });
    }
    if (!removed.empty()) {
      removed = removed.difference(nonOwned);
      // Server-side apply removes only what the applier owned; anything else missing from the
      // answer was removed by someone else after live was read.
      const liveOwned = managerFieldSet(managedFieldsOf(live), manager);
      const notOwned = excludeOwnedAncestors(removed.difference(liveOwned), liveOwned);
      removed = removed.difference(notOwned);
    }
    nonOwned = withoutCompositeKeyFields(nonOwned);
    let out = removeItems(schema, type, pv, nonOwned);
    try {
      out = merge(schema, type, lv, out);
    } catch (e) {
      throw new Error(`error applying predicted live to live state: ${(e as Error).message}`, { cause: e });
    }
    out = removeItems(schema, type, out, removed);
    if (SCHEME_GROUPS.has(groupOf(predicted.apiVersion))) out = withoutRemovalNulls(schema, type, out, pv, lv);
    if (out === null || typeof out !== 'object' || Array.isArray(out))
      throw new Error(`error converting live typedValue: expected map got ${out === null ? '<nil>' : typeof out}`);
    return out as unknown as KubeObject;
  } catch (e) {
    throw wrap((e as Error).message);
  }
}
