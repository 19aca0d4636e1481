{{/* The release's resource name, within Kubernetes' 63 characters. */}}
{{- define "wayfind.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "wayfind.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "wayfind.labels" -}}
{{ include "wayfind.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Whether the state is on PostgreSQL: its URL comes from a Secret. */}}
{{- define "wayfind.postgres" -}}
{{- if .Values.postgres.existingSecret -}}true{{- end -}}
{{- end -}}

{{/* The image, its tag the chart's appVersion unless image.tag names another. */}}
{{- define "wayfind.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
A hash of a Secret's data as the cluster holds it, so a pod annotation changes (and the pods roll)
when its content does; empty under `helm template`, which reads no cluster.
*/}}
{{- define "wayfind.secretChecksum" -}}
{{- $secret := lookup "v1" "Secret" .root.Release.Namespace .name -}}
{{- if $secret -}}{{- toJson $secret.data | sha256sum -}}{{- end -}}
{{- end -}}

{{/* Whether a configuration file is mounted (else the image serves its demo). */}}
{{- define "wayfind.configured" -}}
{{- if or .Values.existingConfigSecret .Values.config -}}true{{- end -}}
{{- end -}}

{{/* The refusals: settings that would start a server that cannot work as asked. */}}
{{- define "wayfind.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not (include "wayfind.postgres" .)) -}}
{{- fail (printf "replicaCount is %d, but replicas share their state only through PostgreSQL: set postgres.existingSecret (a Secret holding WAYFIND_DATABASE_URL) or config.storage.postgres.url, or keep replicaCount: 1 (SQLite on one volume)" (int .Values.replicaCount)) -}}
{{- end -}}
{{- if dig "storage" "postgres" "url" "" .Values.config -}}
{{- fail "config.storage.postgres.url would put the database's password in a ConfigMap: put the URL in a Secret and name it in postgres.existingSecret (its key in postgres.secretKey)" -}}
{{- end -}}
{{- if and .Values.config .Values.existingConfigSecret -}}
{{- fail "set either config (a ConfigMap made by the chart) or existingConfigSecret (your Secret's wayfind.yaml), not both" -}}
{{- end -}}
{{- end -}}
