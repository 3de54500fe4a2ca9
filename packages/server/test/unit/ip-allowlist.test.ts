import { describe, expect, it } from 'vitest';
import { allowlistEntryProblem, ipAllowed } from '../../src/domain/ip-allowlist.js';

describe('allowlistEntryProblem', () => {
  it.each([
    '10.0.0.7',
    '10.0.0.0/8',
    '10.1.2.3/32',
    '0.0.0.0/0',
    '2001:db8::1',
    '2001:db8::/32',
    '2001:db8:abcd::/48',
    '::1',
    '::/0',
    '::ffff:10.1.2.3',
  ])('accepts %s', (entry) => {
    expect(allowlistEntryProblem(entry)).toBeNull();
  });

  it.each([
    ['10.0.0.1/8', '10.0.0.0/8'],
    ['192.168.1.1/24', '192.168.1.0/24'],
    ['2001:db8::1/32', '2001:db8::/32'],
  ])('refuses %s (host bits set) and names the range %s', (entry, range) => {
    const problem = allowlistEntryProblem(entry);
    expect(problem).toContain('host bits');
    expect(problem).toContain(range);
  });

  it.each([
    '',
    'garbage',
    'localhost',
    '10.0.0',
    '10.1',
    '10',
    '010.0.0.1',
    '0x0a.0.0.1',
    '1.2.3.04',
    '10.0.0/8',
    '10.0.0.0/08',
    '10.0.0.0/+8',
    '256.0.0.1',
    '10.0.0.0/33',
    '10.0.0.0/',
    '10.0.0.0/-1',
    '/8',
    '2001:db8::/129',
    '2001:db8:::1',
    '10.0.0.0/8/8',
    ' 10.0.0.1',
  ])('refuses %j', (entry) => {
    expect(allowlistEntryProblem(entry)).toEqual(expect.any(String));
  });
});

describe('ipAllowed', () => {
  it('allows everyone with an empty list', () => {
    expect(ipAllowed([], '203.0.113.1')).toBe(true);
    expect(ipAllowed([], '2001:db8::1')).toBe(true);
  });

  it.each([
    [['10.1.2.3'], '10.1.2.3', true],
    [['10.1.2.3'], '10.1.2.4', false],
    [['10.1.0.0/16'], '10.1.200.3', true],
    [['10.1.0.0/16'], '10.2.0.0', false],
    [['2001:db8::1'], '2001:DB8:0:0::1', true],
    [['2001:db8::/32'], '2001:db8:ffff::1', true],
    [['2001:db8::/32'], '2001:db9::1', false],
    [['10.1.2.3'], '::ffff:10.1.2.3', true],
    [['10.1.0.0/16'], '::ffff:10.1.9.9', true],
    [['10.0.0.0/8'], '2001:db8::1', false],
    [['2001:db8::/32'], '10.0.0.1', false],
    [['10.0.0.0/8'], 'not-an-ip', false],
    [['::ffff:10.1.2.3'], '10.1.2.3', true],
    [['::ffff:10.1.2.3'], '::ffff:10.1.2.3', true],
    [['::ffff:10.1.0.0/112'], '10.1.7.7', true],
    [['::ffff:10.1.0.0/112'], '10.2.7.7', false],
  ] as const)('%j allows %s: %s', (list, ip, allowed) => {
    expect(ipAllowed(list, ip)).toBe(allowed);
  });
});
