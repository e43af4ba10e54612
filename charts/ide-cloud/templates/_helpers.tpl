{{/* Common names and labels of IDE Cloud's chart. */}}
{{- define "ide-cloud.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 40 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "ide-cloud.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: app=<component> as the spec names platform pods. */}}
{{- define "ide-cloud.selector" -}}
app: {{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{- define "ide-cloud.image" -}}
{{ printf "%s/%s:%s" .root.Values.images.repository .name .root.Values.images.tag }}
{{- end -}}

{{- define "ide-cloud.tokensSecret" -}}{{ include "ide-cloud.fullname" . }}-tokens{{- end -}}

{{/* The session proxies' Secret: cookie-secret (generated), client-secret (identity provider). */}}
{{- define "ide-cloud.authProxySecret" -}}{{ include "ide-cloud.fullname" . }}-auth-proxy{{- end -}}

{{/*
The session host's sign-in, the same for the sign-in proxy and every session's proxy (the operator
writes the sessions' from its environment: server/src/operator/auth-proxy.ts): the cookie and the
callback must agree, or a sign-in never reaches the session.
*/}}
{{- define "ide-cloud.sessionSignInArgs" -}}
- --redirect-url={{ .Values.operator.sessionScheme }}://{{ .Values.operator.sessionHost }}{{ with .Values.operator.sessionPort }}:{{ . }}{{ end }}/oauth2/callback
- --cookie-name=_ide_cloud_session
- --cookie-expire=24h
- --cookie-secure={{ eq .Values.operator.sessionScheme "https" }}
- --reverse-proxy=true
{{- end -}}

{{/* Non-root, read-only root file system, no privilege escalation: every IDE Cloud container. */}}
{{- define "ide-cloud.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The spec of one app definition: defaults, then the Java override, then the entry itself. */}}
{{- define "ide-cloud.appDefinitionSpec" -}}
{{- $root := .root -}}
{{- $entry := omit .entry "landingPage" "java" -}}
{{- $spec := deepCopy $root.Values.appDefinitions.defaults -}}
{{- if .entry.java -}}{{- $spec = mergeOverwrite $spec (deepCopy $root.Values.appDefinitions.javaResources) -}}{{- end -}}
{{- $spec = mergeOverwrite $spec (deepCopy $entry) -}}
{{- if not (contains ":" (last (splitList "/" $spec.image))) -}}
{{- $_ := set $spec "image" (printf "%s:%s" $spec.image $root.Values.versions.ide) -}}
{{- end -}}
{{- $_ := set $spec "name" .name -}}
{{- toYaml $spec -}}
{{- end -}}
