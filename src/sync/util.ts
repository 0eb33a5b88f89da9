// Small helpers for running API calls side by side and waiting between polls.

/** `fn` over `items` with at most `limit` calls in flight; results in input order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The address of an object, for get and delete. */
export function refOf(o: {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string | undefined };
}): { apiVersion: string; kind: string; name: string; namespace?: string } {
  return {
    apiVersion: o.apiVersion,
    kind: o.kind,
    name: o.metadata.name,
    ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
  };
}

/** The URL path of one object of a resolved kind. */
export function objectPath(
  info: { group: string; version: string; resource: string; namespaced: boolean },
  ref: { name: string; namespace?: string },
): string {
  const base = info.group === '' ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
  const ns = info.namespaced && ref.namespace ? `/namespaces/${encodeURIComponent(ref.namespace)}` : '';
  return `${base}${ns}/${info.resource}/${encodeURIComponent(ref.name)}`;
}
