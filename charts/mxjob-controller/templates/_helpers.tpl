{{/*
Every object is read from the project's own manifests (files/ links to manifests/base,
metacontroller/ and manifests/components/monitoring) and the values are applied on top, so the
chart cannot drift from them; tests/manifests/test_chart.py compares the two object by object.
*/}}

{{/* Helm's labels, added to each object's own. */}}
{{- define "mxjob-controller.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/*
(list $ "files/x.yaml" namespaced) -> the object in that file, as YAML, with Helm's labels and,
if namespaced, the release namespace. Read back with fromYaml to change it further.
*/}}
{{- define "mxjob-controller.load" -}}
{{- $root := index . 0 -}}
{{- $path := index . 1 -}}
{{- $obj := $root.Files.Get $path | fromYaml -}}
{{- if or (not $obj) (hasKey $obj "Error") -}}
{{- fail (printf "%s: not one YAML object (%v)" $path (get ($obj | default dict) "Error")) -}}
{{- end -}}
{{- $labels := include "mxjob-controller.labels" $root | fromYaml -}}
{{- $_ := set $obj.metadata "labels" (merge $labels ($obj.metadata.labels | default dict)) -}}
{{- if index . 2 -}}
{{- $_ := set $obj.metadata "namespace" $root.Release.Namespace -}}
{{- end -}}
{{- toYaml $obj -}}
{{- end }}
