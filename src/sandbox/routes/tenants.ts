/** The tenant-management API (`/v0`). */
import type { FastifyInstance } from 'fastify';
import { CreateTenantRequest, PATHS, SCOPES } from '../../api/schemas.js';
import type { SandboxContext } from '../context.js';
import { HttpError, readJson, requireJsonIfBody, validate } from '../http.js';

export function registerTenantRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  app.post(PATHS.tenants, { config: { scope: SCOPES.tenantsWrite } }, async (request, reply) => {
    const body = validate(CreateTenantRequest, await readJson(request, true));
    if (ctx.tenants.has(body.name)) throw new HttpError(409, `name: tenant ${body.name} already exists`);
    const cell = body.cells[0] as (typeof body.cells)[number];
    const tenant = ctx.tenants.create(body.name, cell, ctx.baseUrl(), `${ctx.baseUrl()}${PATHS.token}`);
    return reply.code(201).send(tenant);
  });

  app.get(
    '/v0/tenants/:id/applications',
    { config: { scope: SCOPES.tenantApplicationsRead } },
    async (request) => {
      requireJsonIfBody(request);
      const { id } = request.params as { id: string };
      const items = ctx.tenants.applications(id);
      if (!items) throw new HttpError(404, `tenant ${id} does not exist`);
      return { items };
    },
  );
}
