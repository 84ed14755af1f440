{{/* The objects' name: fullnameOverride, else the release name. */}}
{{- define "docstream.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* What selects this release's pods (stable across upgrades). */}}
{{- define "docstream.selectorLabels" -}}
app.kubernetes.io/name: docstream
app.kubernetes.io/component: connector
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "docstream.labels" -}}
{{ include "docstream.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The name of the Secret a secrets.files entry names (kafka or credentials). */}}
{{- define "docstream.secretName" -}}
{{- $secret := index .root.Values.secrets .secret | required (printf "secrets.files: no secret %q (kafka or credentials)" .secret) -}}
{{- $secret.name -}}
{{- end -}}
