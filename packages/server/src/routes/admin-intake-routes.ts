import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import { ROUTE_CONFLICT_EXAMPLE } from '../http/examples.js';
import { KEEP_GARBLED } from '../http/intake-adapter.js';
import {
  CreateRouteBody,
  GarbledListSchema,
  PatchRouteBody,
  RouteDetailSchema,
  RouteListSchema,
  RouteNameParams,
  RouteSchema,
  RouteWithTokenSchema,
  routeDetailWire,
  routeWire,
} from '../http/intake-routes.js';
import { methodNotAllowed } from '../http/protocol.js';
import {
  adminProblems,
  BODY_STATUSES,
  headers,
  ProblemSchema,
  ref,
  response,
  SECURITY,
} from '../http/schemas.js';
import { createRoute, rotateRouteToken, updateRoute } from '../operations/intake-routes.js';

const nameOf = (request: { params: unknown }) => (request.params as { name: string }).name;
const noRoute = (name: string) => new ApiError('not_found', `no intake route ${name}`);

const duplicateName = {
  409: response('conflict: a route of that name exists already', ref(ProblemSchema), {
    mediaType: 'application/problem+json',
    examples: { conflict: { summary: 'conflict', value: ROUTE_CONFLICT_EXAMPLE } },
  }),
};

/** `/admin/v1/routes…` — the intake routes of CONTRACT §12: create, list, read, change, delete, rotate. */
export async function adminIntakeRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const tags = ['operator'];
  const security = SECURITY.admin;

  app.post(
    '/routes',
    {
      schema: {
        operationId: 'createRoute',
        summary: 'Create an intake route; an HTTP route’s token is shown only in this answer',
        tags,
        security,
        body: ref(CreateRouteBody),
        response: {
          201: response('The route, with its intake token for kannel and jasmin', ref(RouteWithTokenSchema)),
          ...adminProblems(BODY_STATUSES),
          ...duplicateName,
        },
      },
    },
    async (request, reply) => {
      const body = request.body as Static<typeof CreateRouteBody>;
      const created = await createRoute(ctx.store, ctx.pepper, body, ctx.now());
      ctx.metrics.forgetIntakeRoute(created.route.name);
      return reply
        .code(201)
        .send({ ...routeWire(created.route), ...(created.token === null ? {} : { token: created.token }) });
    },
  );
  app.get(
    '/routes',
    {
      schema: {
        operationId: 'listRoutes',
        summary: 'List every intake route, by name',
        tags,
        security,
        response: { 200: response('Every route', ref(RouteListSchema)), ...adminProblems([]) },
      },
    },
    async () => ({ routes: (await ctx.store.listIntakeRoutes()).map(routeWire) }),
  );
  methodNotAllowed(app, '/routes', ['GET', 'POST']);

  app.get(
    '/routes/:name',
    {
      schema: {
        operationId: 'getRoute',
        summary: 'Read a route, with what it received since start and, for SMPP, the state of its bind',
        tags,
        security,
        params: RouteNameParams,
        response: { 200: response('The route', ref(RouteDetailSchema)), ...adminProblems([404]) },
      },
    },
    async (request) => {
      const name = nameOf(request);
      const route = await ctx.store.getIntakeRoute(name);
      if (!route) throw noRoute(name);
      const status = route.kind === 'smpp' ? await ctx.bindStatus(route) : null;
      return routeDetailWire(route, ctx.metrics.intakeCounts(route.name), status);
    },
  );
  app.patch(
    '/routes/:name',
    {
      schema: {
        operationId: 'updateRoute',
        summary: 'Change the given fields of a route (name and kind never change)',
        tags,
        security,
        params: RouteNameParams,
        body: ref(PatchRouteBody),
        response: {
          200: response('The route as changed', ref(RouteSchema)),
          ...adminProblems([...BODY_STATUSES, 404]),
        },
      },
    },
    async (request) => {
      const name = nameOf(request);
      const body = request.body as Static<typeof PatchRouteBody>;
      const updated = await updateRoute(ctx.store, ctx.pepper, name, body);
      if (!updated) throw noRoute(name);
      return routeWire(updated);
    },
  );
  app.delete(
    '/routes/:name',
    {
      schema: {
        operationId: 'deleteRoute',
        summary: 'Delete a route: its token stops working at once (receipts it brought stay)',
        tags,
        security,
        params: RouteNameParams,
        response: {
          204: { description: 'Deleted', type: 'null', headers: headers([]) },
          ...adminProblems([404]),
        },
      },
    },
    async (request, reply) => {
      const name = nameOf(request);
      if (!(await ctx.store.deleteIntakeRoute(name))) throw noRoute(name);
      ctx.metrics.forgetIntakeRoute(name);
      return reply.code(204).send();
    },
  );
  methodNotAllowed(app, '/routes/:name', ['GET', 'PATCH', 'DELETE']);

  app.post(
    '/routes/:name/token',
    {
      schema: {
        operationId: 'rotateRouteToken',
        summary: 'Give a kannel or jasmin route a new intake token; the old one stops working at once',
        tags,
        security,
        params: RouteNameParams,
        response: {
          200: response('The route with its new token', ref(RouteWithTokenSchema)),
          ...adminProblems([400, 404, 413, 415]),
        },
      },
    },
    async (request) => {
      const name = nameOf(request);
      const rotated = await rotateRouteToken(ctx.store, ctx.pepper, name);
      if (!rotated) throw noRoute(name);
      return { ...routeWire(rotated.route), token: rotated.token };
    },
  );
  methodNotAllowed(app, '/routes/:name/token', ['POST']);

  app.get(
    '/routes/:name/garbled',
    {
      schema: {
        operationId: 'listGarbledReceipts',
        summary: 'The last 1,000 receipts the route could not read, newest first',
        tags,
        security,
        params: RouteNameParams,
        response: {
          200: response('The unreadable receipts', ref(GarbledListSchema)),
          ...adminProblems([404]),
        },
      },
    },
    async (request) => {
      const name = nameOf(request);
      if (!(await ctx.store.getIntakeRoute(name))) throw noRoute(name);
      const garbled = await ctx.store.listGarbledIntake(name, KEEP_GARBLED);
      return { garbled: garbled.map((g) => ({ ...g, at: g.at.toISOString() })) };
    },
  );
  methodNotAllowed(app, '/routes/:name/garbled', ['GET']);
}
