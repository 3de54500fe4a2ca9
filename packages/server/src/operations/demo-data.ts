import type { MessageUpsert, ReceiptInput } from '../domain/ingest/precedence.js';
import type { DrStatuscode } from '../domain/vocabulary.js';
import type { AccountStore, MessageStore } from '../store/store.js';
import { createAccount } from './accounts.js';

/**
 * The demo account of a fresh database (CONTRACT §8). Its secret is public, so it only answers loopback
 * callers. The data is labelled: every text starts with "[demo]".
 */
export const DEMO_ACCOUNT = {
  name: 'Demo account (sample data; delete it for production use)',
  key: 'DEMOKEY1',
  secret: 'DEMOSECR',
  ipWhitelist: ['127.0.0.0/8', '::1'],
} as const;

export const DEMO_CONTACT = { channel: 'WHATSAPP', channelUserId: '447700900123' } as const;
export const DEMO_HISTORY_LENGTH = 240;

const MINUTE = 60_000;

/** SMS messages of the "spring-sale" campaign, one per receipt outcome, plus the send outcomes. */
const SMS_OUTCOMES: { code: DrStatuscode | null; sendStatus?: '1' | '400'; errcode?: string }[] = [
  { code: 'delivered' },
  { code: 'accepted' },
  { code: 'rejected', errcode: '5' },
  { code: 'failed', errcode: '2' },
  { code: 'expired', errcode: '6' },
  { code: 'deleted', errcode: '7' },
  { code: 'unknown', errcode: '1' },
  { code: null, sendStatus: '1' },
  { code: null, sendStatus: '400' },
];

export function demoMessages(now: Date): { messages: MessageUpsert[]; receipts: ReceiptInput[] } {
  const at = (minutesAgo: number) => new Date(now.getTime() - minutesAgo * MINUTE);
  const messages: MessageUpsert[] = [];
  const receipts: ReceiptInput[] = [];

  SMS_OUTCOMES.forEach((outcome, i) => {
    const id = `demo-sms-${String(i + 1).padStart(4, '0')}`;
    const to = `4477009001${String(30 + i)}`;
    messages.push({
      id,
      channel: 'SMS',
      channelUserId: to,
      campaignId: 'spring-sale',
      createdAt: at(600 - i),
      text: `[demo] Spring sale: 20% off this week (${outcome.code ?? `send status ${outcome.sendStatus}`})`,
      sms: { status: outcome.sendStatus ?? '0', network: '23415', price: 0.0421, counts: 1 },
    });
    if (outcome.code) {
      receipts.push({
        messageId: id,
        drStatuscode: outcome.code,
        drErrcode: (outcome.errcode ?? '0') as ReceiptInput['drErrcode'],
        drTime: at(598 - i),
      });
    }
  });

  // One SMS request sent to three numbers: /dlr answers with one item per recipient.
  for (const [n, to] of ['447700900201', '447700900202', '33612345678'].entries()) {
    messages.push({
      id: 'demo-sms-multi',
      channel: 'SMS',
      channelUserId: to,
      campaignId: 'spring-sale',
      createdAt: at(500),
      text: '[demo] Your order has shipped and is on its way across two long SMS parts, so counts is 2.',
      sms: { status: '0', network: n === 2 ? '20801' : '23415', price: 0.0842, counts: 2 },
    });
    receipts.push({
      messageId: 'demo-sms-multi',
      to,
      drStatuscode: n === 1 ? 'failed' : 'delivered',
      drErrcode: n === 1 ? '3' : '0',
      drTime: at(499),
    });
  }

  // A long WhatsApp conversation with one contact, to page through.
  for (let i = 0; i < DEMO_HISTORY_LENGTH; i++) {
    const inbound = i % 3 === 2;
    messages.push({
      id: `demo-wa-${String(i + 1).padStart(4, '0')}`,
      channel: 'WHATSAPP',
      channelUserId: DEMO_CONTACT.channelUserId,
      direction: inbound ? 'inbound' : 'outbound',
      ...(i < 6 && !inbound ? { campaignId: 'welcome-series' } : {}),
      createdAt: at(5000 - i * 20),
      text: inbound ? `[demo] Customer reply #${i + 1}` : `[demo] Agent message #${i + 1}`,
      ...(inbound ? {} : { status: i % 7 === 0 ? 'read' : 'delivered' }),
    });
  }

  // A few messages on the other channels.
  messages.push(
    {
      id: 'demo-viber-0001',
      channel: 'VIBER',
      channelUserId: '491701234567',
      campaignId: 'welcome-series',
      createdAt: at(300),
      text: '[demo] Welcome on Viber',
      status: 'delivered',
    },
    {
      id: 'demo-tg-0001',
      channel: 'TELEGRAM',
      channelUserId: 'tg:88217731',
      createdAt: at(200),
      text: '[demo] Hello from Telegram',
      status: 'read',
    },
    {
      id: 'demo-amb-0001',
      channel: 'APPLEMB',
      channelUserId: 'urn:mbid:AQAAY8demo',
      createdAt: at(100),
      text: '[demo] Apple Messages for Business',
      status: 'sent',
    },
    {
      id: 'demo-rbm-0001',
      channel: 'RBM',
      channelUserId: '+447700900999',
      createdAt: at(50),
      content: { richCard: { title: '[demo] RBM card', media: 'https://example.com/card.png' } },
      status: 'failed',
    },
  );
  return { messages, receipts };
}

/** Creates the demo account and its data; returns false when the database already has accounts. */
export async function loadDemoData(
  store: AccountStore & MessageStore,
  pepper: Buffer,
  now: Date,
): Promise<boolean> {
  if (await store.hasAccounts()) return false;
  const { account } = await createAccount(
    store,
    pepper,
    { ...DEMO_ACCOUNT, ipWhitelist: [...DEMO_ACCOUNT.ipWhitelist] },
    now,
  );
  const { messages, receipts } = demoMessages(now);
  const ingested = await store.ingestMessages(account.id, messages, now);
  if (!ingested.ok) throw new Error(`demo messages rejected: ${JSON.stringify(ingested.errors)}`);
  const applied = await store.ingestReceipts(account.id, receipts, now);
  if (!applied.ok) throw new Error(`demo receipts rejected: ${JSON.stringify(applied.errors)}`);
  return true;
}

/** The banner printed at start while the demo account exists. */
export function demoBanner(baseUrl: string): string {
  const { key, secret } = DEMO_ACCOUNT;
  return [
    '',
    `Demo account: key=${key} secret=${secret} (public demo credentials, accepted from loopback only)`,
    'Try:',
    `  curl '${baseUrl}/dlr?key=${key}&secret=${secret}&messageid=demo-sms-multi'`,
    `  curl -u ${key}:${secret} '${baseUrl}/messages?channel=WHATSAPP&channelUserId=${DEMO_CONTACT.channelUserId}&size=5'`,
    `  curl -u ${key}:${secret} '${baseUrl}/messages?campaignId=spring-sale'`,
    `  curl -u ${key}:${secret} '${baseUrl}/api/v1/contacts/messages?messageIds=demo-sms-0001,demo-wa-0001'`,
    `  curl '${baseUrl}/openapi.json'`,
    '',
  ].join('\n');
}
