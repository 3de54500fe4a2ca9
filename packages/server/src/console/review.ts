import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { type ReviewFigures, reviewFigures } from '../domain/review.js';
import { parseReviewPeriod, type ReviewPeriodForm } from '../domain/review-period.js';
import { dayLabel, dayOf, isFinal } from '../domain/rollup.js';
import { DR_STATUSCODES } from '../domain/vocabulary.js';
import { dailyRateChart, finalStatesChart } from './charts.js';
import { toCsv } from './csv.js';
import { pageAccount, signedOnly } from './guards.js';
import { formatCount, formatDuration, formatRate } from './numbers.js';
import { type ConsoleDeps, field, page } from './render.js';
import { isReviewTable, REVIEW_TABLES, reviewTables } from './review-tables.js';

/**
 * Page 4, Review (CONTRACT §13, docs/console.md): an account's figures for a period and optionally a campaign,
 * read from the review rollup (one `reviewSummary` call, never a scan of messages), with two charts and each
 * table as CSV. An account sees its own; the operator names the account with `account`, as on every other
 * account page.
 */

const periodOf = (request: FastifyRequest, now: Date) =>
  parseReviewPeriod(
    {
      from: field(request.query, 'from'),
      to: field(request.query, 'to'),
      campaign: field(request.query, 'campaign'),
    },
    now,
  );

/** The query string that names this period (and, for the operator, the account) again. */
function periodQuery(form: ReviewPeriodForm, operatorAccount: string | null): URLSearchParams {
  const query = new URLSearchParams({ from: form.from, to: form.to });
  if (form.campaign !== '') query.set('campaign', form.campaign);
  if (operatorAccount !== null) query.set('account', operatorAccount);
  return query;
}

/** Every day of the period, oldest first, with its rate, or none on a day with nothing sent. */
function dailyPoints(figures: ReviewFigures, form: ReviewPeriodForm) {
  const byDay = new Map(figures.byDay.map((d) => [d.day, d]));
  const points = [];
  for (let day = dayOf(new Date(form.from)); day <= dayOf(new Date(form.to)); day++) {
    const label = dayLabel(day);
    const held = byDay.get(label);
    points.push({ day: label, sent: held?.sent ?? 0, rate: held ? held.deliveryRate : null });
  }
  return points;
}

export async function reviewPages(app: FastifyInstance, { ctx }: ConsoleDeps): Promise<void> {
  app.get('/review', { schema: { hide: true }, preHandler: signedOnly }, async (request, reply) => {
    const account = await pageAccount(ctx, request);
    const operatorAccount = request.signed?.kind === 'operator' ? account.id : null;
    const parsed = periodOf(request, ctx.now());
    const data = { title: 'Review', account, form: parsed.form };
    if (!parsed.ok) return page(request, reply, 'review', { ...data, error: parsed.detail }, 400);

    const figures = reviewFigures(await ctx.store.reviewSummary(account.id, parsed.period));
    const tables = reviewTables(figures);
    const query = periodQuery(parsed.form, operatorAccount);
    const csv = (table: string) =>
      `/console/review.csv?${new URLSearchParams({ table, ...Object.fromEntries(query) })}`;
    const finals = DR_STATUSCODES.filter(isFinal).map((state) => ({ state, n: figures.receipts[state] }));
    return page(request, reply, 'review', {
      ...data,
      figures,
      tables: REVIEW_TABLES.map((name) => ({ ...tables[name], csv: csv(name) })),
      charts: {
        dailyRate: dailyRateChart(dailyPoints(figures, parsed.form)),
        finalStates: finalStatesChart(finals),
      },
      format: { count: formatCount, rate: formatRate, duration: formatDuration },
    });
  });

  app.get('/review.csv', { schema: { hide: true }, preHandler: signedOnly }, async (request, reply) => {
    const account = await pageAccount(ctx, request);
    const table = field(request.query, 'table') ?? '';
    if (!isReviewTable(table))
      throw new ApiError('invalid_request', `“table” must be one of ${REVIEW_TABLES.join(', ')}.`);
    const parsed = periodOf(request, ctx.now());
    if (!parsed.ok) throw new ApiError('invalid_request', parsed.detail);
    const figures = reviewFigures(await ctx.store.reviewSummary(account.id, parsed.period));
    const { columns, rows } = reviewTables(figures)[table];
    // A campaign id may hold ':' (not allowed in a Windows file name): the name keeps the safe characters only.
    const campaign =
      parsed.form.campaign === '' ? '' : `-${parsed.form.campaign.replace(/[^A-Za-z0-9._-]/g, '_')}`;
    const filename = `review-${table}-${parsed.form.from}-to-${parsed.form.to}${campaign}.csv`;
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${filename}"`)
      .send(
        toCsv(
          columns.map((c) => c.label),
          rows,
        ),
      );
  });
}
