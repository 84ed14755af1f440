/** The tenant-management API (`/v0`): a tenant is created in one cell, its application lives there. */
import type { FastifyInstance } from 'fastify';
import { CreateTenantRequest, PATHS, SCOPES } from '../../api/schemas.js';
import type { SandboxContext } from '../context.js';
import { HttpError, readJson, requireJsonIfBody, validate } from '../http.js';
import { applicationView, tenantView } from '../tenants.js';

export function registerTenantRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  app.post(PATHS.tenants, { config: { scope: SCOPES.tenantsWrite } }, async (request, reply) => {
    const body = validate(CreateTenantRequest, await readJson(request, true));
    const cell = body.cells[0] as (typeof body.cells)[number];
    const urls = ctx.cells.urlsOf(cell);
    if (!urls) {
      throw new HttpError(
        400,
        `cells: cell ${cell} is not served by this sandbox (served: ${ctx.cells.served().join(', ')})`,
      );
    }
    if (ctx.tenants.has(body.name)) throw new HttpError(409, `name: tenant ${body.name} already exists`);
    const clientId = `${body.name}-${cell}`;
    if (ctx.tenants.application(clientId)) {
      throw new HttpError(409, `name: the application id ${clientId} is already taken`);
    }
    const tenant = ctx.tenants.create(body.name, cell);
    return reply.code(201).send(tenantView(tenant, urls));
  });

  app.get(
    '/v0/tenants/:id/applications',
    { config: { scope: SCOPES.tenantApplicationsRead } },
    async (request) => {
      requireJsonIfBody(request);
      const { id } = request.params as { id: string };
      const tenant = ctx.tenants.get(id);
      // A tenant's own application sees its own tenant only, as with submissions.
      const own = request.grant?.tenantId;
      const urls = tenant ? ctx.cells.urlsOf(tenant.cell) : null;
      if (!tenant || !urls || (own != null && own !== id)) {
        throw new HttpError(404, `tenant ${id} does not exist`);
      }
      return { items: tenant.applications.map((a) => applicationView(a, urls)) };
    },
  );
}
