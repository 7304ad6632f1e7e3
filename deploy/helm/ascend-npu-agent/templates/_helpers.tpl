{{/*
The image of both workloads: repository@digest, or repository:tag with the chart's appVersion as the default tag.
*/}}
{{- define "ascend-npu-agent.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/*
The enabled pools of agent.pools, as a list sorted by key (range over a map is sorted in Go templates), each checked:
a pool without a known chip or a name, or two pools with one DaemonSet name, is refused here with the pool's key.
*/}}
{{- define "ascend-npu-agent.pools" -}}
{{- $pools := list -}}
{{- $names := dict -}}
{{- range $key, $pool := .Values.agent.pools -}}
{{- if $pool.enabled -}}
{{- if not (has $pool.chip (list "Ascend910" "Ascend310P" "Ascend910A5")) -}}
{{- fail (printf "agent.pools.%s.chip: %v is not a chip kind of this chart (Ascend910, Ascend310P, Ascend910A5)" $key $pool.chip) -}}
{{- end -}}
{{- if hasKey $names $pool.name -}}
{{- fail (printf "agent.pools.%s.name: DaemonSet %s is also the name of pool %s" $key $pool.name (get $names $pool.name)) -}}
{{- end -}}
{{- $_ := set $names $pool.name $key -}}
{{- $pools = append $pools (merge (dict "key" $key) $pool) -}}
{{- end -}}
{{- end -}}
{{- toJson $pools -}}
{{- end -}}

{{/*
"true" when an enabled pool has one of the given chip kinds (chip reset: Ascend910 and Ascend910A5; nodes/status: Ascend910A5).
*/}}
{{- define "ascend-npu-agent.anyChip" -}}
{{- $root := index . 0 -}}
{{- $kinds := index . 1 -}}
{{- $found := false -}}
{{- if $root.Values.agent.enabled -}}
{{- range $pool := include "ascend-npu-agent.pools" $root | fromJsonArray -}}
{{- if has $pool.chip $kinds -}}
{{- $found = true -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $found -}}true{{- end -}}
{{- end -}}

{{/*
"true" when an enabled pool runs the DRA driver (deviceApi dra or both): the DRA objects are rendered (templates/dra.yaml).
*/}}
{{- define "ascend-npu-agent.anyDra" -}}
{{- $found := false -}}
{{- if .Values.agent.enabled -}}
{{- range $pool := include "ascend-npu-agent.pools" . | fromJsonArray -}}
{{- if has ($pool.deviceApi | default "plugin") (list "dra" "both") -}}
{{- $found = true -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $found -}}true{{- end -}}
{{- end -}}
