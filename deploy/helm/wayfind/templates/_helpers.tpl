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

{{/* Whether the state is on PostgreSQL: the URL from a Secret, or storage.postgres in the config. */}}
{{- define "wayfind.postgres" -}}
{{- if or .Values.postgres.existingSecret (dig "storage" "postgres" "url" "" .Values.config) -}}true{{- end -}}
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
{{- if and .Values.config .Values.existingConfigSecret -}}
{{- fail "set either config (a ConfigMap made by the chart) or existingConfigSecret (your Secret's wayfind.yaml), not both" -}}
{{- end -}}
{{- end -}}
