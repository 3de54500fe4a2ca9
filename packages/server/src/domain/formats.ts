import { isIP } from 'node:net';
import { CHANNELS, type Channel } from './vocabulary.js';

/** Formats of CONTRACT §1. Every check is a plain function so routes, CLI and stores share one definition. */

const CREDENTIAL = /^[A-Za-z0-9]{8}$/;
const MESSAGE_ID = /^[A-Za-z0-9._:-]{1,64}$/;
const PHONE = /^[1-9][0-9]{5,14}$/;
const NETWORK = /^[0-9]{5,6}$/;
const ROUTE_NAME = /^[a-z0-9-]{1,32}$/;
const CARRIER_MESSAGE_ID = /^[\x20-\x7e]{1,64}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// Control characters (C0, DEL, C1) and every Unicode white space are refused in a channel user id.
const BAD_USER_ID_CHAR = /[\p{Cc}\s\u2028\u2029]/u;

export const isCredential = (value: string): boolean => CREDENTIAL.test(value);
export const isMessageId = (value: string): boolean => MESSAGE_ID.test(value);
export const isCampaignId = (value: string): boolean => MESSAGE_ID.test(value);
export const isPhoneNumber = (value: string): boolean => PHONE.test(value);
export const isNetwork = (value: string): boolean => NETWORK.test(value);
export const isUuid = (value: string): boolean => UUID.test(value);
/** A route's name (CONTRACT §12): 1-32 of a-z 0-9 -. */
export const isRouteName = (value: string): boolean => ROUTE_NAME.test(value);
/** A carrier's message id on a route (CONTRACT §12): 1-64 printable ASCII characters (space included). */
export const isCarrierMessageId = (value: string): boolean => CARRIER_MESSAGE_ID.test(value);

/** Matches a channel name case-insensitively; returns the canonical upper-case name, or null. */
export function parseChannel(value: string): Channel | null {
  // ASCII letters only: toUpperCase maps other letters onto them ("ſms" would read as SMS).
  if (!/^[A-Za-z]{1,16}$/.test(value)) return null;
  const upper = value.toUpperCase();
  return (CHANNELS as readonly string[]).includes(upper) ? (upper as Channel) : null;
}

/** SMS identities are phone numbers; other channels accept any 1–128 visible characters. */
export function isChannelUserId(channel: Channel, value: string): boolean {
  if (channel === 'SMS') return isPhoneNumber(value);
  const length = [...value].length;
  return length >= 1 && length <= 128 && !BAD_USER_ID_CHAR.test(value);
}

/** Describes why a channel user id is refused, for error details. */
export function channelUserIdRule(channel: Channel): string {
  return channel === 'SMS'
    ? 'an SMS channelUserId is a phone number: country code and number, 6-15 digits, no + and no leading 0'
    : 'channelUserId must be 1-128 characters with no white space or control characters';
}

export const isIpAddress = (value: string): boolean => isIP(value) !== 0;
