// Kubernetes label selectors (metav1.LabelSelector) as used by argocd-cm `globalProjects` (spec §7):
// matchLabels and matchExpressions are ANDed; an empty selector selects everything, as
// LabelSelectorAsSelector does.
import { z } from 'zod';

export const LabelSelectorRequirementSchema = z.looseObject({
  key: z.string(),
  operator: z.string(),
  values: z.array(z.string()).nullish(),
});

export const LabelSelectorSchema = z.looseObject({
  matchLabels: z.record(z.string(), z.string()).nullish(),
  matchExpressions: z.array(LabelSelectorRequirementSchema).nullish(),
});
export type LabelSelector = z.infer<typeof LabelSelectorSchema>;

export type Labels = Readonly<Record<string, string>>;
export type SelectorCheck = { ok: true } | { ok: false; error: string };

/** The reasons Kubernetes refuses a selector (operator and values only; key syntax is not checked). */
export function checkLabelSelector(selector: LabelSelector): SelectorCheck {
  for (const [i, req] of (selector.matchExpressions ?? []).entries()) {
    const values = req.values ?? [];
    switch (req.operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0)
          return {
            ok: false,
            error: `matchExpressions[${i}].values: for 'In', 'NotIn' operators, values set can't be empty`,
          };
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0)
          return {
            ok: false,
            error: `matchExpressions[${i}].values: values set must be empty for exists and does not exist`,
          };
        break;
      default:
        return {
          ok: false,
          error: `matchExpressions[${i}].operator: "${req.operator}" is not a valid label selector operator`,
        };
    }
  }
  return { ok: true };
}

/** True when `labels` satisfy `selector`. The selector must have passed checkLabelSelector. */
export function matchesLabelSelector(selector: LabelSelector, labels: Labels): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (!Object.hasOwn(labels, key) || labels[key] !== value) return false;
  }
  for (const req of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, req.key);
    const values = req.values ?? [];
    switch (req.operator) {
      case 'In':
        if (!has || !values.includes(labels[req.key] as string)) return false;
        break;
      case 'NotIn':
        if (has && values.includes(labels[req.key] as string)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}
