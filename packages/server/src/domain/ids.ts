import { v7 } from 'uuid';

/** A new identifier for contacts, conversations and accounts: UUIDv7, so ids sort by creation time. */
export const newId = (): string => v7();
