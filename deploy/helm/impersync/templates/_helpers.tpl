{{/* The release's full name, used for every object this chart owns. */}}
{{- define "impersync.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "impersync.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "impersync.commonLabels" -}}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "impersync.labels" -}}
{{ include "impersync.selectorLabels" . }}
{{ include "impersync.commonLabels" . }}
{{- end -}}

{{/* The renderer: its own component label, so that no controller selector (Service, policy) picks it. */}}
{{- define "impersync.rendererSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: renderer
{{- end -}}

{{- define "impersync.rendererLabels" -}}
{{ include "impersync.rendererSelectorLabels" . }}
{{ include "impersync.commonLabels" . }}
{{- end -}}

{{- define "impersync.rendererName" -}}
{{- printf "%s-renderer" (include "impersync.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The Secret the controller creates at startup and the renderer mounts. */}}
{{- define "impersync.rendererTokenSecret" -}}
{{- printf "%s-renderer-token" (include "impersync.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "impersync.serviceAccountName" -}}
{{- default (include "impersync.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "impersync.validate" -}}
{{- if not (has .Values.rbac.shape (list "strict" "fallback")) -}}
{{- fail (printf "rbac.shape must be strict or fallback, not %q" .Values.rbac.shape) -}}
{{- end -}}
{{- if and (eq .Values.rbac.shape "strict") .Values.argocdCm.create (not (and .Values.argocdCm.impersonation.enabled .Values.argocdCm.impersonation.enforced)) -}}
{{- fail "rbac.shape strict needs argocdCm.impersonation.enabled and enforced: the controller would have no rights to sync as itself. Use rbac.shape: fallback, or turn both on." -}}
{{- end -}}
{{- end -}}

{{/* rbac.impersonate: each entry complete, no namespace both whole and by name, no system namespace whole. */}}
{{- define "impersync.validateImpersonation" -}}
{{- $imp := .Values.rbac.impersonate -}}
{{- $whole := $imp.namespaces | default list -}}
{{- range $whole -}}
{{- if has . (list "kube-system" "kube-public" "kube-node-lease") -}}
{{- fail (printf "rbac.impersonate.namespaces: %q would let the controller impersonate every name in it, including kube-system's controllers (no ServiceAccount object needed), which is cluster-admin; list the ServiceAccounts you mean in rbac.impersonate.serviceAccounts instead" .) -}}
{{- end -}}
{{- end -}}
{{- range $imp.serviceAccounts | default list -}}
{{- if or (not .namespace) (not .name) -}}
{{- fail (printf "rbac.impersonate.serviceAccounts: every entry needs namespace and name, got %v" .) -}}
{{- end -}}
{{- if has .namespace $whole -}}
{{- fail (printf "rbac.impersonate: namespace %q is in namespaces (every ServiceAccount there) and in serviceAccounts (%s only); list it in one of them" .namespace .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Shards the Applications are split into: sharding.shards, or as many as replicas (at least 1). */}}
{{- define "impersync.shards" -}}
{{- $s := int (default 0 (.Values.sharding).shards) -}}
{{- if eq $s 0 -}}{{- $s = int .Values.replicas -}}{{- end -}}
{{- max 1 $s -}}
{{- end }}
