{{/* Names and labels. */}}
{{- define "jetjob.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "jetjob.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "jetjob.labels" -}}
app.kubernetes.io/name: {{ include "jetjob.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{ include "jetjob.extraLabels" . }}
{{- end -}}

{{/* The labels besides the selector's (pod templates add these to it). */}}
{{- define "jetjob.extraLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: jetjob
{{- end -}}

{{/* jetjob.selector: (dict "root" $ "component" "scheduler" ["group" NAME]) */}}
{{- define "jetjob.selector" -}}
app.kubernetes.io/name: {{ include "jetjob.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- if .group }}
jetjob.io/group: {{ .group | quote }}
{{- end }}
{{- end -}}

{{- define "jetjob.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "jetjob.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The chart's own Secret holds only what values give inline. */}}
{{- define "jetjob.secretName" -}}
{{- include "jetjob.fullname" . -}}
{{- end -}}

{{- define "jetjob.hasOwnSecret" -}}
{{- if or (and .Values.postgres.url (not .Values.postgres.existingSecret)) (and .Values.apiToken.value (not .Values.apiToken.existingSecret)) -}}
true
{{- end -}}
{{- end -}}

{{/* jetjob.natsEnv: (dict "auth" AUTH "tls" TLS) -> env entries */}}
{{- define "jetjob.natsEnv" -}}
{{- $a := .auth -}}
{{- if $a.user }}
- name: JETJOB_NATS_USER
  value: {{ $a.user | quote }}
{{- end }}
{{- if $a.passwordSecret }}
- name: JETJOB_NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $a.passwordSecret }}
      key: {{ $a.passwordKey | default "password" }}
{{- end }}
{{- if $a.tokenSecret }}
- name: JETJOB_NATS_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $a.tokenSecret }}
      key: {{ $a.tokenKey | default "token" }}
{{- end }}
{{- if $a.credsSecret }}
- name: JETJOB_NATS_CREDS
  value: /etc/jetjob/nats-creds/{{ $a.credsKey | default "nats.creds" }}
{{- end }}
{{- if .tls.enabled }}
- name: JETJOB_NATS_TLS_CA
  value: /etc/jetjob/nats-tls/{{ .tls.caKey }}
{{- if .tls.certKey }}
- name: JETJOB_NATS_TLS_CERT
  value: /etc/jetjob/nats-tls/{{ .tls.certKey }}
- name: JETJOB_NATS_TLS_KEY
  value: /etc/jetjob/nats-tls/{{ required "nats.tls.keyKey: the client key's key in the Secret, with certKey" .tls.keyKey }}
{{- end }}
{{- end }}
{{- end -}}

{{/* jetjob.natsVolumeMounts / jetjob.natsVolumes: (dict "auth" AUTH "tls" TLS) */}}
{{- define "jetjob.natsVolumeMounts" -}}
{{- if .auth.credsSecret }}
- name: nats-creds
  mountPath: /etc/jetjob/nats-creds
  readOnly: true
{{- end }}
{{- if .tls.enabled }}
- name: nats-tls
  mountPath: /etc/jetjob/nats-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "jetjob.natsVolumes" -}}
{{- if .auth.credsSecret }}
- name: nats-creds
  secret:
    secretName: {{ .auth.credsSecret }}
    defaultMode: 0440
{{- end }}
{{- if .tls.enabled }}
- name: nats-tls
  secret:
    secretName: {{ required "nats.tls.existingSecret: the Secret with the CA (and client certificate)" .tls.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{/* jetjob.secretEnv: a list of {name, secret, key} */}}
{{- define "jetjob.secretEnv" -}}
{{- range . }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key }}
{{- end }}
{{- end -}}

{{/* jetjob.checkAuth: at most one NATS authentication method. */}}
{{- define "jetjob.checkAuth" -}}
{{- $n := 0 -}}
{{- if .user }}{{ $n = add1 $n }}{{ end -}}
{{- if .tokenSecret }}{{ $n = add1 $n }}{{ end -}}
{{- if .credsSecret }}{{ $n = add1 $n }}{{ end -}}
{{- if gt $n 1 }}{{ fail "nats auth: set one of user (+passwordSecret), tokenSecret, credsSecret" }}{{ end -}}
{{- if and .passwordSecret (not .user) }}{{ fail "nats auth: passwordSecret needs user" }}{{ end -}}
{{- end -}}

{{/* jetjob.workerConfig: (dict "root" $ "w" MERGED "group" NAME) -> ConfigMap data */}}
{{- define "jetjob.workerConfig" -}}
{{- $w := .w -}}
JETJOB_GROUP: {{ .group | quote }}
JETJOB_HANDLERS: {{ join "," $w.handlers | quote }}
JETJOB_CONCURRENCY: {{ $w.concurrency | quote }}
JETJOB_METRICS_LISTEN: {{ printf ":%v" $w.metricsPort | quote }}
JETJOB_NATS_URL: {{ .root.Values.nats.url | quote }}
JETJOB_STREAM_REPLICAS: {{ .root.Values.nats.streamReplicas | quote }}
JETJOB_LOG_FORMAT: {{ $w.logFormat | quote }}
JETJOB_LOG_LEVEL: {{ $w.logLevel | quote }}
{{- with $w.httpAllowHosts }}
JETJOB_HTTP_ALLOW_HOSTS: {{ join "," . | quote }}
{{- end }}
{{- with $w.egressAllow }}
JETJOB_EGRESS_ALLOW: {{ join "," . | quote }}
{{- end }}
{{- with .root.Values.triggerSigning.extraPublicKeys }}
JETJOB_TRIGGER_PUBLIC_KEYS: {{ join "," . | quote }}
{{- end }}
{{- if .root.Values.triggerSigning.insecureUnsigned }}
JETJOB_INSECURE_ACCEPT_UNSIGNED_TRIGGERS: "true"
{{- end }}
{{- range $k, $v := $w.config }}
{{ $k }}: {{ $v | quote }}
{{- end }}
{{- end -}}

{{/*
jetjob.metricsToken*: the scrape token (metrics.token), mounted from its
Secret and named by JETJOB_METRICS_TOKEN_FILE, in the scheduler and worker
pods alike; the monitors send it (jetjob.metricsAuthorization).
*/}}
{{- define "jetjob.metricsTokenEnv" -}}
{{- with .Values.metrics.token.existingSecret }}
- name: JETJOB_METRICS_TOKEN_FILE
  value: /etc/jetjob/metrics-token/{{ $.Values.metrics.token.existingSecretKey }}
{{- end }}
{{- end -}}

{{- define "jetjob.metricsTokenVolumeMounts" -}}
{{- if .Values.metrics.token.existingSecret }}
- name: metrics-token
  mountPath: /etc/jetjob/metrics-token
  readOnly: true
{{- end }}
{{- end -}}

{{- define "jetjob.metricsTokenVolumes" -}}
{{- with .Values.metrics.token.existingSecret }}
- name: metrics-token
  secret:
    secretName: {{ . }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{- define "jetjob.metricsAuthorization" -}}
{{- with .Values.metrics.token.existingSecret }}
authorization:
  type: Bearer
  credentials:
    name: {{ . }}
    key: {{ $.Values.metrics.token.existingSecretKey }}
{{- end }}
{{- end -}}

{{/* jetjob.checkTriggerSigning: a key pair, or unsigned triggers asked for by name. */}}
{{- define "jetjob.checkTriggerSigning" -}}
{{- if not (or .Values.triggerSigning.existingSecret .Values.triggerSigning.insecureUnsigned) }}
{{- fail "triggerSigning.existingSecret: the Secret with the trigger signing key pair (jetjob-scheduler trigger-key generate --out trigger.key --public-out trigger.pub; docs/operations.md, \"Trigger signing\"), or triggerSigning.insecureUnsigned: true" }}
{{- end }}
{{- end -}}
