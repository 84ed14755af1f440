# docstream image: the CLI (connector, sandbox, stack tools). Multi-stage: the runtime stage holds only
# the production dependencies and the built code, and runs as the non-root `node` user (uid 1000).
# The base is pinned to an exact Node.js release, the same as package.json's devDependency `node` (a
# unit test holds them together; `--build-arg NODE_VERSION=...` moves it for one build).
# `npm run image:check` builds it with podman and runs a document through a container started from it.
ARG NODE_VERSION=24.21.0

FROM node:${NODE_VERSION}-bookworm-slim AS build
# The package registry (a mirror: `--build-arg NPM_CONFIG_REGISTRY=...`); used by this stage only.
ARG NPM_CONFIG_REGISTRY=https://registry.npmjs.org/
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` builds, and the sources are not copied yet.
RUN npm ci --ignore-scripts
COPY . .
# Source maps, declarations and the incremental build's record are for developers: the runtime
# does not read them.
RUN npm run build && mkdir -p avro config stack \
  && find dist -type f \( -name '*.map' -o -name '*.d.ts' -o -name '.tsbuildinfo' \) -delete

# The production dependencies: the build's node_modules without the dev ones (no second download),
# and without the packages' type declarations and source maps, which nothing reads at run time.
FROM build AS deps
RUN npm prune --omit=dev --ignore-scripts \
  && find node_modules -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -delete

FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production
# docstream's runtime defaults (src/cli/runtime-defaults.ts): a restore's transient memory goes back
# to the system (a 2 MB young generation, malloc trimmed, two arenas). `docstream run` starts itself
# again with them when they are missing; set here, the container runs one process.
ENV NODE_OPTIONS=--max-semi-space-size=2 MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=131072 MALLOC_MMAP_THRESHOLD_=65536
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/avro ./avro
COPY --from=build /app/config ./config
COPY --from=build /app/stack ./stack
USER node
# In a container, loopback is the container's own: the servers of `docstream run` listen on every
# interface of its network namespace, so that a published port (`-p 9464:9464`), the health probes
# and Prometheus reach them (http.host and webhooks.host default to 127.0.0.1 elsewhere). Publish
# the ports on the host's loopback (`-p 127.0.0.1:9464:9464`) unless others must reach them.
ENV DOCSTREAM_HTTP_HOST=0.0.0.0 DOCSTREAM_WEBHOOKS_HOST=0.0.0.0
# 8080: `docstream sandbox`; 9464: /metrics, /healthz and /readyz of `docstream run` (http.port);
# 8090: its Adaptive Decision webhook receiver, when enabled (webhooks.port).
EXPOSE 8080 8090 9464
# Alive = /healthz answers 200 on http.port. No curl in a slim image: node asks. It follows
# DOCSTREAM_HTTP_HOST/DOCSTREAM_HTTP_PORT (a host of 0.0.0.0 or :: is asked on loopback).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const e=process.env,h=e.DOCSTREAM_HTTP_HOST,a=!h||h==='0.0.0.0'||h==='::'?'127.0.0.1':h;fetch(`http://${a.includes(':')?`[${a}]`:a}:${e.DOCSTREAM_HTTP_PORT||9464}/healthz`,{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "dist/cli/index.js"]
CMD ["--help"]
