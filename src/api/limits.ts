// What one Application's render may cost (beyond Argo CD): its time, its object count and the size
// of its objects. The defaults are argocd-cm keys of impersync's own, read by the controller
// (controller/app-limits.ts) and sent with each render request (renderer/protocol.ts), where the
// renderer applies them; past one, that Application alone has a ComparisonError naming the key.

export const APPLICATION_LIMIT_KEYS = {
  /** A Go duration ("90s", "2m"). */
  renderTimeout: 'impersync.application.renderTimeout',
  /** A whole number of objects. */
  maxObjects: 'impersync.application.maxObjects',
  /** A size ("16Mi"): the rendered objects as JSON. */
  maxRenderedSize: 'impersync.application.maxRenderedSize',
} as const;

export interface ApplicationLimits {
  /** Time of one render, from its request to its objects. */
  renderTimeoutMs: number;
  /** Objects one render may produce. */
  maxObjects: number;
  /** Bytes of the rendered objects, as JSON. */
  maxRenderedBytes: number;
}

export const DEFAULT_APPLICATION_LIMITS: ApplicationLimits = {
  renderTimeoutMs: 90_000,
  maxObjects: 10_000,
  maxRenderedBytes: 16 * 1024 * 1024,
};
