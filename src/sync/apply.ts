// Applying one task's object, all through the one DestinationClient, as gitops-engine's
// applyObject (sync_context.go): the fields of Argo CD's managers taken over first (takeover.ts),
// then Replace=true (create, update in place, replace, or delete and create with Force=true) or a
// server-side apply, deleted and applied again with Force=true when the server refuses to change
// the object in place: the delete sent now, the create at the step that sees the old object gone.
// Records the outcome on the task; never throws for an API error.
import type { KubeObject } from '../api/index.ts';
import { groupOf } from '../api/index.ts';
import { forceOn, replaceOn, validationDisabled } from './options.ts';
import { takeoverPatch } from './takeover.ts';
import type { SyncTask, TaskContext } from './tasks.ts';
import { deleteForRecreate, forgetRecreation, kubectlName, recreationOf, setResult } from './tasks.ts';
import { objectPath, refOf } from './util.ts';

/**
 * Hands the fields of Argo CD's managers to ours before the apply (takeover.ts): why it could not,
 * or the object as it is now (null when gone), or null when there was nothing to hand over.
 */
export async function takeOver(
  ctx: TaskContext,
  live: KubeObject | null,
): Promise<{ error: string } | { live: KubeObject | null } | null> {
  if (!live || ctx.dryRun || !ctx.takeover?.length) return null;
  const ref = refOf(live);
  const info = await ctx.client.resolve(ref.apiVersion, ref.kind);
  if (!info.ok) return { error: info.error.message };
  // The patch is guarded by the resourceVersion it was made from: an object whose status its own
  // controller writes (a Deployment's) has often changed since the comparison read it. Read again
  // and make the patch again, as client-go's RetryOnConflict would, a few times.
  let current: KubeObject = live;
  for (let attempt = 1; ; attempt++) {
    const patch = takeoverPatch(current, ctx.fieldManager, ctx.takeover, new Date());
    if (!patch) return current === live ? null : { live: current };
    const res = await ctx.client.request<KubeObject>({
      method: 'PATCH',
      path: objectPath(info.value, ref),
      body: patch,
      contentType: 'application/json-patch+json',
    });
    if (res.ok) return { live: res.value };
    // 422 is a failed `test` (or an invalid patch), 409 a conflict: both worth a fresh read.
    if ((res.error.code !== 422 && res.error.code !== 409) || attempt >= TAKEOVER_ATTEMPTS)
      return { error: res.error.message };
    const again = await ctx.client.uncached().get(ref);
    // The patch's own error says more than a failed read after it.
    if (!again.ok) return { error: res.error.message };
    if (!again.value) return { live: null }; // gone: nothing to hand over; the apply creates it
    // Deleted and made again since the comparison: not the object whose diff was shown.
    if (again.value.metadata.uid !== live.metadata.uid)
      return { error: 'the object was deleted and created again since it was compared' };
    // Unchanged: the patch itself was refused, and would be again.
    if (again.value.metadata.resourceVersion === current.metadata.resourceVersion) return { error: res.error.message };
    current = again.value;
  }
}

/** How many times the takeover's guarded patch is made from a fresh read. */
const TAKEOVER_ATTEMPTS = 5;

/** How a Replace=true task ended this step: applied, failed, or waiting for its old object to go. */
type Replaced = { ok: true; message: string; live?: KubeObject } | { ok: false; message: string } | { deleting: true };

/**
 * Replace=true (gitops-engine applyObject): a missing object is created; a CRD or Namespace is
 * updated in place (replacing one would delete what it holds); anything else is replaced, or with
 * Force=true deleted and, once gone (at a later step: deleteForRecreate), created again.
 */
async function replaceTask(ctx: TaskContext, t: SyncTask, target: KubeObject, force: boolean): Promise<Replaced> {
  const dry = ctx.dryRun ? ' (server dry run)' : '';
  // A delete an earlier step sent: what is created now replaces the object it deleted.
  const verb = recreationOf(ctx, t) ? 'replaced' : 'created';
  const create = async (made: string): Promise<Replaced> => {
    const res = await ctx.client.create(target, { dryRun: ctx.dryRun });
    return res.ok
      ? { ok: true, message: `${kubectlName(target)} ${made}${dry}`, live: res.value }
      : { ok: false, message: res.error.message };
  };
  if (!t.live) return create(verb);
  const ref = refOf(target);
  const info = await ctx.client.resolve(ref.apiVersion, ref.kind);
  if (!info.ok) return { ok: false, message: info.error.message };
  const inPlace =
    (target.kind === 'CustomResourceDefinition' && groupOf(target.apiVersion) === 'apiextensions.k8s.io') ||
    (target.kind === 'Namespace' && groupOf(target.apiVersion) === '');
  if (force && !inPlace) {
    // A dry run deletes nothing: the create is sent as a dry run, as the step after the delete would be.
    if (ctx.dryRun) return create('replaced');
    const gone = await deleteForRecreate(ctx, t, t.live);
    if (typeof gone === 'object') return { ok: false, message: gone.error };
    if (gone === 'deleting') return { deleting: true };
    if (!t.live) return create('replaced');
    // The object made after the delete (by a step whose result a crash lost): replaced in place below.
  }
  const live = t.live;
  const body = structuredClone(target);
  body.metadata.resourceVersion = live.metadata.resourceVersion;
  const res = await ctx.client.request<KubeObject>({
    method: 'PUT',
    path: objectPath(info.value, ref),
    query: { dryRun: ctx.dryRun ? 'All' : undefined },
    body,
  });
  if (!res.ok) return { ok: false, message: inPlace ? `error when updating: ${res.error.message}` : res.error.message };
  return {
    ok: true,
    message: inPlace ? `${target.kind}/${target.metadata.name} updated${dry}` : `${kubectlName(target)} replaced${dry}`,
    live: res.value,
  };
}

/** Why the server refused to change an object in place, so that Force=true deletes and re-creates it. */
function refusedInPlace(code: number): boolean {
  return code === 422 || code === 409;
}

/** The task waits for its old object to go: no result yet; a later step creates it (sync.ts). */
function waitForDeletion(t: SyncTask): boolean {
  t.deleting = true;
  return true;
}

/**
 * Applies one task; false when it failed. A task whose object Replace=true / Force=true deleted to
 * create again, and that is not gone yet, is left `deleting`, without a result.
 */
export async function applyTask(ctx: TaskContext, t: SyncTask): Promise<boolean> {
  const target = t.target as KubeObject;
  const fieldValidation = validationDisabled(target) ? 'Ignore' : ctx.fieldValidation;
  const force = forceOn(ctx.force ?? false, target, t.live);
  // An object being deleted to be created again has nothing to hand over.
  const taken = recreationOf(ctx, t) ? null : await takeOver(ctx, t.live);
  if (taken && 'error' in taken) {
    setResult(
      ctx,
      t,
      'SyncFailed',
      'Failed',
      `Failed to perform client-side apply migration for ${kubectlName(target)}: ${taken.error}`,
    );
    return false;
  }
  // The object as the takeover left it: a Replace=true update must carry its new resourceVersion.
  if (taken) t.live = taken.live;
  if (replaceOn(ctx.replace ?? false, target, t.live)) {
    const r = await replaceTask(ctx, t, target, force);
    if ('deleting' in r) return waitForDeletion(t);
    forgetRecreation(ctx, t);
    if (!r.ok) {
      setResult(ctx, t, 'SyncFailed', 'Failed', r.message);
      return false;
    }
    if (r.live) t.live = r.live;
    setResult(ctx, t, 'Synced', ctx.dryRun ? 'Succeeded' : 'Running', r.message);
    return true;
  }
  const send = () =>
    ctx.client.apply(target, {
      dryRun: ctx.dryRun,
      fieldManager: ctx.fieldManager,
      force: true,
      ...(fieldValidation ? { fieldValidation } : {}),
    });
  // Force=true: what cannot be changed in place (an immutable field) is deleted, and applied again
  // once gone (at a later step). A delete sent at an earlier step is only looked at, not sent again.
  const earlier = recreationOf(ctx, t) !== undefined && t.live !== null && !ctx.dryRun;
  let res = earlier ? undefined : await send();
  if (t.live && (earlier || (res && !res.ok && force && !ctx.dryRun && refusedInPlace(res.error.code)))) {
    const gone = await deleteForRecreate(ctx, t, t.live);
    if (typeof gone === 'object') {
      forgetRecreation(ctx, t);
      setResult(ctx, t, 'SyncFailed', 'Failed', gone.error);
      return false;
    }
    if (gone === 'deleting') return waitForDeletion(t);
    res = undefined;
  }
  forgetRecreation(ctx, t);
  res ??= await send();
  if (!res.ok) {
    setResult(ctx, t, 'SyncFailed', 'Failed', res.error.message);
    return false;
  }
  t.live = res.value;
  const warnings = res.warnings.length ? ` (warnings: ${res.warnings.join('; ')})` : '';
  // A dry run creates nothing, so there is nothing to wait for.
  setResult(
    ctx,
    t,
    'Synced',
    ctx.dryRun ? 'Succeeded' : 'Running',
    `${kubectlName(target)} serverside-applied${ctx.dryRun ? ' (server dry run)' : ''}${warnings}`,
  );
  return true;
}
