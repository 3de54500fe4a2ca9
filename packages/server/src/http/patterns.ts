import { CHANNELS } from '../domain/vocabulary.js';

/**
 * The formats of CONTRACT §1 as JSON Schema patterns, for the OpenAPI document: a client or a property-based
 * tester reads the rules from the document instead of from prose. They say what domain/formats.ts checks, in
 * the ECMA-262 subset every JSON Schema tool understands (no \p classes, no inline flags).
 */

const ID = '[A-Za-z0-9._:-]{1,64}';
const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
const IPV4 = `${OCTET}(?:\\.${OCTET}){3}`;

/** Calendar dates the years 1970 to 9999 hold: each month its days, February 29 in leap years only. */
const YEAR = '(?:19[7-9][0-9]|[2-9][0-9]{3})';
const MONTH_DAY =
  '(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))';
const LEAP_YEAR =
  '(?:19(?:7[26]|8[048]|9[26])|[2-9][0-9](?:0[48]|[2468][048]|[13579][26])|(?:[2468][048]|[3579][26])00)';
const TIME = '(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\\.[0-9]{3}';

/** Any letter of `word` in either case: channels are matched case-insensitively. */
const anyCase = (word: string) =>
  [...word].map((c) => (/[A-Za-z]/.test(c) ? `[${c.toUpperCase()}${c.toLowerCase()}]` : c)).join('');

export const PATTERNS = {
  /** A message id (`messageid`, ingest `id`, `messageId`) and a `campaignId`. */
  messageId: `^${ID}$`,
  /**
   * `messageIds`: 1 to 20 ids separated by commas; white space around them and empty elements are dropped.
   * (Repeated ids count once, so more than 20 elements are accepted when some repeat; the pattern says the
   * common case.)
   */
  messageIds: `^[\\s,]*${ID}(?:\\s*,[\\s,]*${ID}){0,19}[\\s,]*$`,
  channel: `^(?:${CHANNELS.map(anyCase).join('|')})$`,
  uuid: '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$',
  /** `to` and an SMS `channelUserId`: country code and number, no `+`, no leading 0. */
  phone: '^[1-9][0-9]{5,14}$',
  /** A `channelUserId` on any channel: 1–128 characters, no white space, no control character (SMS: {@link phone}). */
  channelUserId: '^[^\\s\\x00-\\x1f\\x7f-\\x9f]{1,128}$',
  network: '^[0-9]{5,6}$',
  eventId: '^evt_[0-9A-HJKMNP-TV-Z]{26}$',
  /** The spec's `drTime`, `yyyy-MM-dd HH:mm:ss.SSS` (UTC): a real calendar date in the years 1970 to 9999. */
  drTime: `^(?:${YEAR}-${MONTH_DAY}|${LEAP_YEAR}-02-29) ${TIME}$`,
  /** An IPv4 CIDR range in standard notation (no leading zeros). */
  ipv4Range: `^${IPV4}/(?:3[0-2]|[12]?[0-9])$`,
  /** An IPv6 CIDR range: the shape only (the address itself is judged as `format: ipv6` judges one). */
  ipv6Range: '^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*/(?:12[0-8]|1[01][0-9]|[1-9]?[0-9])$',
  /** Text with no control character (C0, DEL, C1): an account name. */
  noControl: '^[^\\x00-\\x1f\\x7f-\\x9f]*$',
  /** Text without U+0000, which PostgreSQL text cannot hold (refused on both engines alike). */
  noNul: '^[^\\x00]*$',
  /** An intake route's name (CONTRACT §12). */
  routeName: '^[a-z0-9-]{1,32}$',
  /** A carrier's id of a recipient (`sms.carrier.messageId`): 1–64 printable ASCII characters, space included. */
  carrierMessageId: '^[\\x20-\\x7e]{1,64}$',
  /** An intake route's token: `wbi_` + 32 base64url characters. */
  intakeToken: '^wbi_[A-Za-z0-9_-]{32}$',
  /** Text with at least one character that is not white space. */
  notBlank: '\\S',
  /** A callback URL starts with its scheme, http or https in any case. */
  callbackUrl: '^[Hh][Tt][Tt][Pp][Ss]?://',
} as const;
