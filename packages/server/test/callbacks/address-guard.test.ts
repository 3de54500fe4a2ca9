import { lookup as dnsLookup } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedReason } from '../../src/callbacks/address-guard.js';
import {
  CallbackHttpClient,
  CallbackRequestError,
  guardedConnector,
  guardedLookup,
} from '../../src/callbacks/http-client.js';

describe('refusedReason', () => {
  it.each([
    ['127.0.0.1', 'loopback (127.0.0.0/8)'],
    ['127.255.0.9', 'loopback (127.0.0.0/8)'],
    ['::1', 'loopback (::1/128)'],
    ['10.1.2.3', 'private (10.0.0.0/8)'],
    ['172.16.0.1', 'private (172.16.0.0/12)'],
    ['172.31.255.255', 'private (172.16.0.0/12)'],
    ['192.168.1.1', 'private (192.168.0.0/16)'],
    ['169.254.1.1', 'link-local (169.254.0.0/16)'],
    ['fe80::1', 'link-local (fe80::/10)'],
    ['fe80::1%eth0', 'link-local (fe80::/10)'],
    ['fc00::1', 'unique-local (fc00::/7)'],
    ['fd12:3456::1', 'unique-local (fc00::/7)'],
    ['100.64.0.1', 'CGNAT (100.64.0.0/10)'],
    ['100.127.255.254', 'CGNAT (100.64.0.0/10)'],
    ['224.0.0.1', 'multicast (224.0.0.0/4)'],
    ['239.255.255.250', 'multicast (224.0.0.0/4)'],
    ['ff02::1', 'multicast (ff00::/8)'],
    ['0.0.0.0', 'unspecified (0.0.0.0/8)'],
    ['::', 'unspecified (::/128)'],
    ['255.255.255.255', 'broadcast (255.255.255.255/32)'],
    ['169.254.169.254', 'cloud metadata (169.254.169.254/32)'],
    ['fd00:ec2::254', 'cloud metadata (fd00:ec2::254/128)'],
    ['100.100.100.200', 'cloud metadata (100.100.100.200/32)'],
    ['168.63.129.16', 'cloud metadata (168.63.129.16/32)'],
    ['240.0.0.1', 'reserved (240.0.0.0/4)'],
    ['192.0.2.10', 'reserved (documentation) (192.0.2.0/24)'],
  ])('refuses %s: %s', (ip, reason) => {
    expect(refusedReason(ip)).toBe(reason);
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback (127.0.0.0/8) via IPv4-mapped IPv6'],
    ['::ffff:7f00:1', 'loopback (127.0.0.0/8) via IPv4-mapped IPv6'],
    ['::ffff:169.254.169.254', 'cloud metadata (169.254.169.254/32) via IPv4-mapped IPv6'],
    ['::ffff:10.0.0.1', 'private (10.0.0.0/8) via IPv4-mapped IPv6'],
    ['64:ff9b::127.0.0.1', 'loopback (127.0.0.0/8) via NAT64'],
    ['64:ff9b::a9fe:a9fe', 'cloud metadata (169.254.169.254/32) via NAT64'],
    ['64:ff9b::192.168.0.1', 'private (192.168.0.0/16) via NAT64'],
    ['2002:7f00:1::1', 'loopback (127.0.0.0/8) via 6to4'],
  ])('judges the IPv4 address inside %s', (ip, reason) => {
    expect(refusedReason(ip)).toBe(reason);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
  ])('allows the public address %s', (ip) => {
    expect(refusedReason(ip)).toBeNull();
  });

  it('refuses what is not an IP address', () => {
    expect(refusedReason('localhost')).toBe('not an IP address');
    expect(refusedReason('')).toBe('not an IP address');
  });
});

describe('the guarded HTTP client', () => {
  let server: Server;
  let port: number;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits++;
      req.resume();
      res.end('ok');
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((done) => server.close(done));
  });

  const post = async (client: CallbackHttpClient, url: string) => {
    try {
      return await client.post(url, { 'content-type': 'application/json' }, '{}');
    } catch (error) {
      expect(error).toBeInstanceOf(CallbackRequestError);
      return (error as Error).message;
    }
  };

  it('refuses loopback, private and metadata destinations, by IP literal or by name, naming the reason', async () => {
    const client = new CallbackHttpClient({ allowPrivate: false, timeoutMs: 2000 });
    try {
      const before = hits;
      expect(await post(client, `http://127.0.0.1:${port}/hook`)).toBe(
        'refused destination: 127.0.0.1: loopback (127.0.0.0/8); WAYBILL_CALLBACK_ALLOW_PRIVATE=true allows it (development only)',
      );
      expect(await post(client, `http://localhost:${port}/hook`)).toMatch(
        /^refused destination: localhost resolves to (127\.0\.0\.1|::1): loopback/,
      );
      expect(await post(client, `http://[::1]:${port}/hook`)).toBe(
        'refused destination: ::1: loopback (::1/128); WAYBILL_CALLBACK_ALLOW_PRIVATE=true allows it (development only)',
      );
      expect(await post(client, `http://[::ffff:127.0.0.1]:${port}/hook`)).toMatch(
        /^refused destination: ::ffff:7f00:1: loopback \(127\.0\.0\.0\/8\) via IPv4-mapped IPv6;/,
      );
      expect(await post(client, 'http://169.254.169.254/latest/meta-data/')).toBe(
        'refused destination: 169.254.169.254: cloud metadata (169.254.169.254/32); WAYBILL_CALLBACK_ALLOW_PRIVATE=true allows it (development only)',
      );
      expect(await post(client, 'http://10.0.0.1/hook')).toBe(
        'refused destination: 10.0.0.1: private (10.0.0.0/8); WAYBILL_CALLBACK_ALLOW_PRIVATE=true allows it (development only)',
      );
      // https goes through the same hook: refused before any TLS handshake.
      expect(await post(client, `https://127.0.0.1:${port}/hook`)).toBe(
        'refused destination: 127.0.0.1: loopback (127.0.0.0/8); WAYBILL_CALLBACK_ALLOW_PRIVATE=true allows it (development only)',
      );
      expect(hits).toBe(before);
    } finally {
      await client.destroy();
    }
  });

  it('judges the address actually connected to, whatever the name resolved to', async () => {
    // A resolver that hands out loopback unfiltered (as a rebinding DNS answer would reach a naive pre-check):
    // the check of socket.remoteAddress after connecting still refuses it, before a byte is sent.
    const lying = guardedConnector({ timeout: 2000 }, (_hostname, options, callback) =>
      dnsLookup('127.0.0.1', options, callback as never),
    );
    const agent = new Agent({ connect: lying });
    const before = hits;
    await expect(
      request(`http://public.example:${port}/hook`, { dispatcher: agent, method: 'POST', body: '{}' }),
    ).rejects.toThrow(/refused destination: 127\.0\.0\.1: loopback/);
    expect(hits).toBe(before);
    await agent.destroy();
  });

  it('drops refused addresses from a lookup and fails when none is left', async () => {
    const result = await new Promise<{ error: Error | null }>((done) =>
      guardedLookup('localhost', { all: true }, (error) => done({ error })),
    );
    expect(result.error?.message).toMatch(/^refused destination: localhost resolves to .*: loopback/);
  });

  it('sends anywhere when private destinations are allowed', async () => {
    const client = new CallbackHttpClient({ allowPrivate: true, timeoutMs: 2000 });
    try {
      expect(await post(client, `http://127.0.0.1:${port}/hook`)).toEqual({
        status: 200,
        retryAfter: undefined,
      });
      expect(await post(client, `http://localhost:${port}/hook`)).toEqual({
        status: 200,
        retryAfter: undefined,
      });
    } finally {
      await client.destroy();
    }
  });
});
