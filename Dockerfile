# storefront-api: multi-stage build — install, compile, prune to production dependencies.
# Node 24 LTS (supported until April 2028): it has process.execve, so `storefront serve`
# replaces itself with its heap-capped run instead of keeping a launcher beside it (one
# process, which takes the signals itself). CI runs the process, socket and build tests on it
# (.ci/run). Node 20 ended in April 2026; 26 works as well and is one FROM line away.
FROM node:24-bookworm-slim AS build
WORKDIR /app
# patches/ before the install: its postinstall step patches the database driver (see docs/architecture.md).
COPY package.json package-lock.json ./
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY . .
# dist/: the compiled JavaScript and, beside its db/, the migrations (bin/build.js).
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
# No TypeScript sources and no tsx: bin/storefront.js runs dist/.
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
# The embedded database (no DATABASE_URL) lives in /app/data; give it a volume in real use.
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Configuration comes only from the environment (see docs/operators.md). Operator commands:
# docker exec … node bin/storefront.js keys list
# `serve` caps its own heap (HEAP_LIMIT_MB, bin/heap.js): no flag is needed here. The exec
# form makes node PID 1 with nothing in between: `docker stop`'s SIGTERM reaches the server,
# which drains and exits 0.
CMD ["node", "bin/storefront.js", "serve"]
