# docstream image: the CLI (connector, sandbox, stack tools). Multi-stage, runs as the non-root `node` user.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` builds, and the sources are not copied yet.
RUN npm ci --ignore-scripts
COPY . .
RUN npm run build && mkdir -p avro config stack

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` builds with TypeScript, which --omit=dev leaves out; dist comes from `build`.
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY --from=build /app/avro ./avro
COPY --from=build /app/config ./config
COPY --from=build /app/stack ./stack
USER node
EXPOSE 8080
ENTRYPOINT ["node", "dist/cli/index.js"]
CMD ["--help"]
