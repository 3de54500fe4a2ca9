import { parseArgs } from 'node:util';
import type { Channel, MessagePage, MessageRecord } from '@waybill/client';
import { parseChannel } from '../domain/formats.js';
import { MAX_PAGE_SIZE } from '../domain/query-params.js';
import { CHANNELS } from '../domain/vocabulary.js';
import {
  CLIENT_OPTIONS,
  clientFromFlags,
  parseCommandLine,
  renderTable,
  reportFailure,
  requestOptions,
  shellQuote,
  usageError,
  WireLog,
} from './client-commands.js';
import { EXIT } from './options.js';

/** `waybill messages`: stored messages by id, or a page of a contact's (or a campaign's) history, through the SDK. */

const USAGE = `Usage:
  waybill messages --ids ID[,ID...] [--json]
  waybill messages --channel CHANNEL (--user CHANNEL_USER_ID | --contact CONTACT_ID) [--campaign ID] [--size N] [--cursor CURSOR] [--json]
  waybill messages --campaign ID [--channel CHANNEL] [--size N] [--cursor CURSOR] [--json]

Shows stored messages, oldest first: the ones with the given ids (any number of them), or one page of the
history of a contact on a channel, or of a campaign: the latest --size messages, or with --cursor the --size
messages just older than the page that printed that cursor. When older messages exist the table ends with
the command that shows them.

  --ids LIST       comma-separated message ids
  --channel NAME   WHATSAPP, APPLEMB, VIBER, SMS, TELEGRAM or RBM
  --user ID        the contact's identity on the channel (a phone number on SMS)
  --contact UUID   the contact's id
  --campaign ID    only messages of this campaign
  --size N         messages per page, 1-${MAX_PAGE_SIZE} (default: 20); the API's size parameter
  --cursor CURSOR  the page older than the one that printed this cursor (nextCursor in --json)
  --limit N        deprecated: the old name of --size (prints a warning)
  --json           print the API's answer exactly as it comes, {"messages":[…],"nextCursor":…,"hasMore":…}
  --url URL        the server (default: $WAYBILL_URL)
  --key KEY        API key (default: $WAYBILL_KEY)
  --secret SECRET  API secret (default: $WAYBILL_SECRET)
  --timeout MS     give up on a request after MS milliseconds (default: 30000)

Exit codes: 0 success, 1 the API answered with an error, 2 bad usage, 3 the server could not be reached.`;

export async function messagesCommand(args: string[]): Promise<number> {
  const parsed = parseCommandLine(args, parseMessagesArgs, USAGE);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (positionals.length > 0) return usageError(`unexpected argument: ${positionals[0]}`, USAGE);

  const plan = planQuery(values);
  if (typeof plan === 'string') return usageError(plan, USAGE);
  if (values.limit !== undefined) {
    process.stderr.write('waybill: --limit is deprecated: it is now --size, the page size (as in the API)\n');
  }
  const wire = new WireLog();
  const client = clientFromFlags(values, USAGE, wire);
  if (typeof client === 'number') return client;

  try {
    const options = requestOptions(values);
    if (plan.kind === 'ids') {
      const records = await client.messages.get(plan.ids, options);
      if (values.json) writeJson(idsEnvelope(records, await wire.bodies()));
      else process.stdout.write(renderMessages(records));
      return EXIT.ok;
    }
    const paging = { ...options, size: plan.size, cursor: plan.cursor };
    const pager =
      plan.kind === 'campaign'
        ? client.messages.campaign(plan.campaignId, { ...paging, channel: plan.channel })
        : client.messages.history({
            ...paging,
            ...plan.who,
            channel: plan.channel,
            campaignId: plan.campaignId,
          });
    // One page, the newest (or the one the cursor points at), ordered oldest first as the API sends it.
    const { value: page } = await pager.pages().next();
    const shown: MessagePage = page ?? { messages: [], nextCursor: null, hasMore: false };
    if (values.json) writeJson((await wire.bodies()).at(-1) ?? shown);
    else process.stdout.write(renderMessages(shown.messages) + olderHint(shown, plan));
    return EXIT.ok;
  } catch (err) {
    return reportFailure(err);
  }
}

function parseMessagesArgs(args: string[]) {
  return parseArgs({
    args,
    options: {
      ...CLIENT_OPTIONS,
      ids: { type: 'string' },
      channel: { type: 'string' },
      user: { type: 'string' },
      contact: { type: 'string' },
      campaign: { type: 'string' },
      size: { type: 'string' },
      cursor: { type: 'string' },
      limit: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
}

type PagePlan = { size: number | undefined; cursor: string | undefined };

type Plan =
  | { kind: 'ids'; ids: string[] }
  | ({
      kind: 'history';
      channel: Channel;
      who: { channelUserId: string } | { contactId: string };
      campaignId: string | undefined;
    } & PagePlan)
  | ({ kind: 'campaign'; campaignId: string; channel: Channel | undefined } & PagePlan);

/** Works out which query the flags ask for; a string is what is wrong with them. */
function planQuery(values: {
  ids?: string | undefined;
  channel?: string | undefined;
  user?: string | undefined;
  contact?: string | undefined;
  campaign?: string | undefined;
  size?: string | undefined;
  cursor?: string | undefined;
  limit?: string | undefined;
}): Plan | string {
  const { ids, user, contact, campaign } = values;
  if (ids !== undefined) {
    const flags = ['channel', 'user', 'contact', 'campaign', 'size', 'cursor', 'limit'] as const;
    const mixed = flags.filter((name) => values[name] !== undefined);
    if (mixed.length > 0) return `--ids cannot be combined with --${mixed.join(', --')}`;
    const list = ids
      .split(',')
      .map((id) => id.trim())
      .filter((id) => id !== '');
    return list.length === 0 ? '--ids needs at least one message id' : { kind: 'ids', ids: list };
  }

  let channel: Channel | undefined;
  if (values.channel !== undefined) {
    const upper = values.channel.trim().toUpperCase();
    channel = parseChannel(upper) ?? undefined;
    if (channel === undefined) return `unknown channel ${values.channel}: use one of ${CHANNELS.join(', ')}`;
  }
  if (values.size !== undefined && values.limit !== undefined)
    return 'give --size, not --limit as well (--limit is its old name)';
  const name = values.limit !== undefined ? '--limit (now --size)' : '--size';
  const rawSize = values.size ?? values.limit;
  const size = rawSize === undefined ? undefined : Number(rawSize);
  if (
    size !== undefined &&
    (rawSize?.trim() === '' || !Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE)
  )
    return `${name} is the page size, a whole number from 1 to ${MAX_PAGE_SIZE}; older pages come with --cursor`;
  if (values.cursor !== undefined && values.cursor.trim() === '') return '--cursor needs a cursor';
  const page = { size, cursor: values.cursor?.trim() };

  if (user !== undefined && contact !== undefined) return 'give --user or --contact, not both';
  if (user === undefined && contact === undefined) {
    if (campaign !== undefined) return { kind: 'campaign', campaignId: campaign, channel, ...page };
    return 'say which messages: --ids, --channel with --user or --contact, or --campaign';
  }
  if (channel === undefined) return '--user and --contact need --channel';
  const who = user !== undefined ? { channelUserId: user } : { contactId: contact ?? '' };
  return { kind: 'history', channel, who, campaignId: campaign, ...page };
}

const writeJson = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

/**
 * The `--ids` answer as the API sends it. Up to 20 ids that is one answer, printed as it came; more ids take
 * one request per 20, and their messages are printed in one envelope of the same shape, in the SDK's order.
 */
function idsEnvelope(records: MessageRecord[], bodies: unknown[]): unknown {
  if (bodies.length === 1) return bodies[0];
  const key = (m: { id?: unknown; channelUserId?: unknown }) =>
    `${String(m.id)}\u0000${String(m.channelUserId)}`;
  const raw = new Map<string, unknown>();
  for (const body of bodies) {
    const messages = (body as { messages?: unknown } | null)?.messages;
    if (!Array.isArray(messages)) continue;
    for (const m of messages) if (typeof m === 'object' && m !== null) raw.set(key(m), m);
  }
  return { messages: records.map((r) => raw.get(key(r)) ?? r), nextCursor: null, hasMore: false };
}

/** Under the table: that older messages exist, and the command that shows them. */
function olderHint(page: MessagePage, plan: Exclude<Plan, { kind: 'ids' }>): string {
  if (!page.hasMore || page.nextCursor === null) return '';
  const words = ['waybill', 'messages'];
  if (plan.channel !== undefined) words.push('--channel', plan.channel);
  if (plan.kind === 'history') {
    if ('channelUserId' in plan.who) words.push('--user', plan.who.channelUserId);
    else words.push('--contact', plan.who.contactId);
  }
  if (plan.campaignId !== undefined) words.push('--campaign', plan.campaignId);
  if (plan.size !== undefined) words.push('--size', String(plan.size));
  words.push('--cursor', page.nextCursor);
  return `\nOlder messages exist: ${words.map(shellQuote).join(' ')}\n`;
}

function renderMessages(records: MessageRecord[]): string {
  if (records.length === 0) return 'No messages found.\n';
  const rows = records.map((m) => [
    m.createdAt,
    m.id,
    m.channel,
    m.direction === 'inbound' ? 'in' : 'out',
    m.channelUserId,
    m.status,
    m.campaignId ?? '-',
    preview(m),
  ]);
  return renderTable(
    ['CREATED (UTC)', 'ID', 'CHANNEL', 'DIR', 'CHANNEL USER', 'STATUS', 'CAMPAIGN', 'TEXT'],
    rows,
  );
}

function preview(m: MessageRecord): string {
  const text = m.text ?? (m.content === null ? '' : JSON.stringify(m.content));
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}
