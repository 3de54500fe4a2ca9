import { parseArgs } from 'node:util';
import type { Channel, MessageRecord } from '@waybill/client';
import { parseChannel } from '../domain/formats.js';
import { MAX_PAGE_SIZE } from '../domain/query-params.js';
import { CHANNELS } from '../domain/vocabulary.js';
import {
  CLIENT_OPTIONS,
  clientFromFlags,
  renderTable,
  reportFailure,
  requestOptions,
  usageError,
} from './client-commands.js';
import { EXIT } from './options.js';

/** `waybill messages`: stored messages by id, or a contact's (or a campaign's) recent history, through the SDK. */

const USAGE = `Usage:
  waybill messages --ids ID[,ID...] [--json]
  waybill messages --channel CHANNEL (--user CHANNEL_USER_ID | --contact CONTACT_ID) [--campaign ID] [--limit N] [--json]
  waybill messages --campaign ID [--channel CHANNEL] [--limit N] [--json]

Shows stored messages, oldest first: the ones with the given ids (any number of them), or the latest
--limit messages of a contact on a channel, or of a campaign.

  --ids LIST       comma-separated message ids
  --channel NAME   WHATSAPP, APPLEMB, VIBER, SMS, TELEGRAM or RBM
  --user ID        the contact's identity on the channel (a phone number on SMS)
  --contact UUID   the contact's id
  --campaign ID    only messages of this campaign
  --limit N        how many of the latest messages to show (default: 20)
  --json           print the messages as JSON (for scripts)
  --url URL        the server (default: $WAYBILL_URL)
  --key KEY        API key (default: $WAYBILL_KEY)
  --secret SECRET  API secret (default: $WAYBILL_SECRET)
  --timeout MS     give up on a request after MS milliseconds (default: 30000)

Exit codes: 0 success, 1 the API answered with an error, 2 bad usage, 3 the server could not be reached.`;

export async function messagesCommand(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseMessagesArgs>;
  try {
    parsed = parseMessagesArgs(args);
  } catch (err) {
    return usageError((err as Error).message, USAGE);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return EXIT.ok;
  }
  if (positionals.length > 0) return usageError(`unexpected argument: ${positionals[0]}`, USAGE);

  const plan = planQuery(values);
  if (typeof plan === 'string') return usageError(plan, USAGE);
  const client = clientFromFlags(values, USAGE);
  if (typeof client === 'number') return client;

  try {
    const options = requestOptions(values);
    let records: MessageRecord[];
    if (plan.kind === 'ids') {
      records = await client.messages.get(plan.ids, options);
    } else {
      const paging = { ...options, pageSize: Math.min(plan.limit, MAX_PAGE_SIZE) };
      const pager =
        plan.kind === 'campaign'
          ? client.messages.campaign(plan.campaignId, { ...paging, channel: plan.channel })
          : client.messages.history({
              ...paging,
              ...plan.who,
              channel: plan.channel,
              campaignId: plan.campaignId,
            });
      // The walk runs newest to oldest; show the result in reading order, oldest first.
      records = (await pager.take(plan.limit)).reverse();
    }
    if (values.json) process.stdout.write(`${JSON.stringify(records, null, 2)}\n`);
    else process.stdout.write(renderMessages(records));
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
      limit: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
}

type Plan =
  | { kind: 'ids'; ids: string[] }
  | {
      kind: 'history';
      channel: Channel;
      who: { channelUserId: string } | { contactId: string };
      campaignId: string | undefined;
      limit: number;
    }
  | { kind: 'campaign'; campaignId: string; channel: Channel | undefined; limit: number };

/** Works out which query the flags ask for; a string is what is wrong with them. */
function planQuery(values: {
  ids?: string | undefined;
  channel?: string | undefined;
  user?: string | undefined;
  contact?: string | undefined;
  campaign?: string | undefined;
  limit?: string | undefined;
}): Plan | string {
  const { ids, user, contact, campaign } = values;
  if (ids !== undefined) {
    const flags = ['channel', 'user', 'contact', 'campaign', 'limit'] as const;
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
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1) return '--limit must be a whole number of at least 1';

  if (user !== undefined && contact !== undefined) return 'give --user or --contact, not both';
  if (user === undefined && contact === undefined) {
    if (campaign !== undefined) return { kind: 'campaign', campaignId: campaign, channel, limit };
    return 'say which messages: --ids, --channel with --user or --contact, or --campaign';
  }
  if (channel === undefined) return '--user and --contact need --channel';
  const who = user !== undefined ? { channelUserId: user } : { contactId: contact ?? '' };
  return { kind: 'history', channel, who, campaignId: campaign, limit };
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
