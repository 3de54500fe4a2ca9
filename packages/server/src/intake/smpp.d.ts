/**
 * The part of the `smpp` package (0.5.x, no types of its own) Waybill uses: its PDU encoder for what the ESME
 * sends, and — in the tests — its server as an SMSC simulator.
 */
declare module 'smpp' {
  import type { EventEmitter } from 'node:events';
  import type { Server as NetServer } from 'node:net';

  export class PDU {
    constructor(command: string, options?: Record<string, unknown>);
    command: string;
    command_id: number;
    command_status: number;
    sequence_number: number;
    [field: string]: unknown;
    isResponse(): boolean;
    response(options?: Record<string, unknown>): PDU;
    toBuffer(): Buffer;
  }

  export interface Session extends EventEmitter {
    send(pdu: PDU, responseCallback?: (response: PDU) => void): boolean;
    close(callback?: () => void): void;
    destroy(callback?: () => void): void;
    pause(): void;
    resume(): void;
    socket: import('node:net').Socket;
    [command: string]: unknown;
  }

  export interface Server extends NetServer {
    sessions: Session[];
  }

  export function createServer(listener?: (session: Session) => void): Server;
}
