import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { PROBLEMS, type ProblemCode } from '../domain/errors.js';
import type { ConsoleSessions } from './session.js';

/**
 * Templates and assets are read from src/console at run time, from `src` and from `dist` alike (both sit two
 * levels below the package); package.json's `files` ships them with the package.
 */
const PACKAGE_ROOT = new URL('../../', import.meta.url);
export const VIEWS_DIR = fileURLToPath(new URL('src/console/views/', PACKAGE_ROOT));
export const ASSETS_DIR = fileURLToPath(new URL('src/console/assets/', PACKAGE_ROOT));

/** What every page group of the console is handed. */
export interface ConsoleDeps {
  ctx: AppContext;
  sessions: ConsoleSessions;
}

/** Renders a page inside the layout, with what the layout needs: who is signed in and the CSRF token. */
export function page(
  request: FastifyRequest,
  reply: FastifyReply,
  template: string,
  data: Record<string, unknown> & { title: string },
  status = 200,
): FastifyReply {
  const signed = request.signed;
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .view(template, {
      ...data,
      signed,
      csrf: signed?.csrf ?? '',
      path: request.url.split('?')[0] ?? '',
    });
}

/** The status and the words a person sees for an error the API would answer with this problem. */
export function errorPage(code: ProblemCode, detail: string) {
  return { status: PROBLEMS[code].status as number, title: PROBLEMS[code].title as string, detail };
}
