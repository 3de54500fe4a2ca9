/** The closed vocabularies of the spec (§2, §3) and the contract (§1, §3). */

export const CHANNELS = ['WHATSAPP', 'APPLEMB', 'VIBER', 'SMS', 'TELEGRAM', 'RBM'] as const;
export type Channel = (typeof CHANNELS)[number];

/** SMS send status (`status` on a DLR item): "1" in progress, "0" submitted, "400" submission failed. */
export const SEND_STATUSES = ['1', '0', '400'] as const;
export type SendStatus = (typeof SEND_STATUSES)[number];

/** The spec's meaning of each send status (§3), as the console shows it. */
export const SEND_STATUS_MEANINGS: Record<SendStatus, string> = {
  '1': 'In progress',
  '0': 'Submitted to carrier successfully',
  '400': 'Submission to carrier failed',
};

/** The spec's meaning of `drStatus` (§3). */
export const DR_STATUS_MEANINGS: Record<0 | 400, string> = { 0: 'Normal', 400: 'Abnormal' };

export const DR_STATUSCODES = [
  'delivered',
  'accepted',
  'rejected',
  'failed',
  'expired',
  'deleted',
  'unknown',
] as const;
export type DrStatuscode = (typeof DR_STATUSCODES)[number];

/** The spec's meaning of each `drStatuscode` (§3). */
export const DR_STATUSCODE_MEANINGS: Record<DrStatuscode, string> = {
  delivered: 'SMS delivered',
  accepted: 'Accepted by operator',
  rejected: 'Rejected by operator',
  failed: 'Send failed',
  expired: 'Operator expired',
  deleted: 'Deleted by operator',
  unknown: 'Unknown error',
};

/** Operator error codes of spec §2.1, with their meaning (used by docs and the SDK's describeErrcode). */
export const DR_ERRCODES = {
  '0': 'Normal',
  '1': 'Unknown error',
  '2': 'Message unreachable (suspended, powered off, no signal, etc.)',
  '3': 'Number deactivated or invalid',
  '4': 'User rejected SMS',
  '5': 'Rejected by operator',
  '6': 'Operator timeout',
  '7': 'Deleted by operator',
  '8': 'User do not disturb (DND)',
  '10': 'Invalid title / sender ID',
  '11': 'Invalid template',
  '12': 'Entity ID mismatch',
  '99': 'Other operator error',
} as const;
export type DrErrcode = keyof typeof DR_ERRCODES;

export const MESSAGE_STATUSES = ['pending', 'sent', 'delivered', 'read', 'failed', 'received'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];
/** Statuses an operator may set on an outbound non-SMS message (inbound is always `received`). */
export const SETTABLE_STATUSES = ['pending', 'sent', 'delivered', 'read', 'failed'] as const;
export type SettableStatus = (typeof SETTABLE_STATUSES)[number];

export const DIRECTIONS = ['outbound', 'inbound'] as const;
export type Direction = (typeof DIRECTIONS)[number];
