# The ascend-npu-agent image: `ascend-npu-agent`, `ascend-fault-center` and `npuctl` on PATH (README "Install").
#
#   podman build -t ascend-npu-agent:0.1.0 .            (or docker build; both stages start from BASE_IMAGE)
#
# Build arguments:
#   BASE_IMAGE           Debian bookworm with Node.js >= 20.19: `node`, `npm` and the Node headers
#                        (<prefix>/include/node, which node-gyp then uses instead of downloading them). The official
#                        node:20-bookworm-slim has all three; a local base (Debian minbase plus a Node install) works
#                        too: the build stage installs its compilers with apt.
#   NODE_EXTRA_CA_CERTS  Empty by default. A CA bundle path that the npm steps trust (a TLS-intercepting proxy); the
#                        build mounts the file there, e.g.
#                          podman build --build-arg NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
#                            -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro -t ... .
#                        It is not kept in the image.
#
# The runtime stage holds the production dependencies, dist/ and the N-API addon only: none of the mock libdcmi.so,
# the mock hccn_tool or the libdcmi_partial.so test fixture that `npm ci` also builds. The vendor libdcmi.so comes
# from the host's driver (deploy/agent/daemonset.yaml mounts /usr/local/Ascend/driver).
ARG BASE_IMAGE=docker.io/library/node:20-bookworm-slim

FROM ${BASE_IMAGE} AS build
ARG NODE_EXTRA_CA_CERTS=
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends g++ make python3 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json binding.gyp tsconfig.json tsconfig.build.json ./
COPY native ./native
COPY proto ./proto
COPY src ./src
COPY scripts ./scripts
COPY test/fixtures/native ./test/fixtures/native
# The code cache's training run (src/cli/code-cache-training.ts, part of the build) plays a start and two faults on
# the mock library with the shipped rules and the demo's 8-chip scenario.
COPY scenarios ./scenarios
COPY faultCode.json faultCustomization.json ./
# The README's production install: the full install builds the addon and dist/, then the dev dependencies go.
RUN prefix="$(dirname "$(dirname "$(command -v node)")")" \
 && if [ -f "$prefix/include/node/node.h" ]; then export npm_config_nodedir="$prefix"; fi \
 && NODE_EXTRA_CA_CERTS="$NODE_EXTRA_CA_CERTS" npm ci --no-audit --no-fund \
 && NODE_EXTRA_CA_CERTS="$NODE_EXTRA_CA_CERTS" npm prune --omit=dev --no-audit --no-fund

FROM ${BASE_IMAGE}
ENV NODE_ENV=production
WORKDIR /opt/ascend-npu-agent
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY --from=build /src/build/Release/dcmi_addon.node ./build/Release/dcmi_addon.node
COPY proto ./proto
COPY scenarios ./scenarios
COPY faultCode.json faultCustomization.json SwitchFaultCode.json publicFaultConfig.json ./
# Upstream's built-in configuration paths (spec device-plugin.md L.3), the agent's -faultCodeFile,
# -faultCustomizationFile and -switchFaultCodeFile defaults.
COPY faultCode.json faultCustomization.json SwitchFaultCode.json /usr/local/
# Everything is root-owned and world-readable, nothing in the image needs writing: the agent (root, privileged) and
# the fault center (any uid, e.g. 65532) write only their mounted state folders.
RUN chmod 0755 dist/cli/agent.js dist/cli/fault-center.js dist/cli/npuctl.js \
 && ln -s /opt/ascend-npu-agent/dist/cli/agent.js /usr/local/bin/ascend-npu-agent \
 && ln -s /opt/ascend-npu-agent/dist/cli/fault-center.js /usr/local/bin/ascend-fault-center \
 && ln -s /opt/ascend-npu-agent/dist/cli/npuctl.js /usr/local/bin/npuctl \
 && install -d -m 0700 /var/lib/ascend-npu-agent \
 && install -d -m 0750 -o 65532 -g 65532 /var/lib/ascend-fault-center \
 && install -d -m 0750 /var/log/mindx-dl/devicePlugin
CMD ["ascend-npu-agent"]
