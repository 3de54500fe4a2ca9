/**
 * Early receipts (CONTRACT §9): a receipt parked before its recipient arrived applies only within
 * WAYBILL_RECEIPT_PARK_SECONDS of its arrival. The one cutoff both ingest (which ignores older parked receipts
 * even before they are swept) and the relay's sweep (which drops them) use.
 */
export function parkedCutoff(now: Date | number, parkSeconds: number): Date {
  return new Date((typeof now === 'number' ? now : now.getTime()) - parkSeconds * 1000);
}
