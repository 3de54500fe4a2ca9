import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/http/access-log.js';

/** The rule, written plainly for the test: every pair whose decoded name is a credential loses its value. */
function reference(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const pairs = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const name = pair.split('=')[0] ?? '';
      let decoded: string;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        return pair;
      }
      return ['key', 'secret', 'token'].includes(decoded) ? `${name}=[redacted]` : pair;
    });
  return `${url.slice(0, q)}?${pairs.join('&')}`;
}

describe('redactUrl', () => {
  it('removes credential values however the names are written', () => {
    expect(redactUrl('/dlr?key=Abcdefgh&secret=Abcdefgh&messageid=m-1')).toBe(
      '/dlr?key=[redacted]&secret=[redacted]&messageid=m-1',
    );
    expect(redactUrl('/dlr?messageid=m-1&k%65y=A&%73ecret=B&token')).toBe(
      '/dlr?messageid=m-1&k%65y=[redacted]&%73ecret=[redacted]&token=[redacted]',
    );
    expect(redactUrl('/dlr?x=?key=1&keys=2&akey=3&key=a=b')).toBe(
      '/dlr?x=?key=1&keys=2&akey=3&key=[redacted]',
    );
    expect(redactUrl('/healthz')).toBe('/healthz');
  });

  it('agrees with decoding every name, on any query', () => {
    const part = fc.constantFrom(
      'key',
      'secret',
      'token',
      'k',
      'ey',
      '%65',
      '%6B',
      '%',
      '+',
      '=',
      '&',
      '?',
      'a',
      '1',
    );
    const query = fc.array(part, { maxLength: 14 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(query, (q) => {
        const url = `/dlr?${q}`;
        expect(redactUrl(url)).toBe(reference(url));
      }),
      { numRuns: 3000 },
    );
  });

  it('agrees with decoding every name on queries written plainly (the one-pass path), long ones included', () => {
    const part = fc.constantFrom(
      'key',
      'secret',
      'token',
      'keys',
      'k',
      'ey',
      'to',
      'ke',
      'n',
      'cret',
      '=',
      '&',
      '?',
      '1',
    );
    const query = fc.array(part, { maxLength: 40 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(query, (q) => {
        const url = `/dlr?${q}`;
        expect(redactUrl(url)).toBe(reference(url));
      }),
      { numRuns: 5000 },
    );
  });
});
