import { describe, expect, it } from '@jest/globals';
import { egressOf } from '../config/egress.js';
import { redactText } from '../observability/redact.js';
import { bypassesProxy, displayProxy, proxyFor, proxyRoutes, proxyUrlProblem } from './proxy.js';

const at = (url: string, noProxy: string) => bypassesProxy(new URL(url), noProxy);

describe('NO_PROXY matching', () => {
  it('matches a name, its subdomains and the dotted and starred forms, not a longer name', () => {
    for (const rule of ['example.com', '.example.com', '*.example.com', 'EXAMPLE.com.']) {
      expect(at('https://example.com/x', rule)).toBe(true);
      expect(at('https://api.example.com/x', rule)).toBe(true);
      expect(at('https://badexample.com/x', rule)).toBe(false);
    }
  });

  it('matches IP literals exactly, ports only when given, and * everything', () => {
    expect(at('http://127.0.0.1:8080/', '127.0.0.1')).toBe(true);
    expect(at('http://127.0.0.10:8080/', '127.0.0.1')).toBe(false);
    expect(at('http://[::1]:8080/', '::1')).toBe(true);
    expect(at('http://[::1]:8080/', '[::1]:8080')).toBe(true);
    expect(at('http://[::1]:8081/', '[::1]:8080')).toBe(false);
    expect(at('https://api.example.com/', 'example.com:443')).toBe(true);
    expect(at('https://api.example.com:8443/', 'example.com:443')).toBe(false);
    expect(at('https://anything.test/', 'other.test, *')).toBe(true);
    expect(at('https://api.example.com/', ' other.test  example.com ')).toBe(true);
    expect(at('https://api.example.com/', '')).toBe(false);
  });

  it('does not exempt loopback unless listed', () => {
    expect(at('http://localhost:8080/', 'example.com')).toBe(false);
    expect(at('http://localhost:8080/', 'localhost,127.0.0.1')).toBe(true);
  });
});

describe('proxy routes', () => {
  const env = {
    https_proxy: 'http://lower:3128',
    HTTPS_PROXY: 'http://upper:3128',
    HTTP_PROXY: 'http://plain:3128',
    NO_PROXY: 'internal.test',
  };

  it('reads the environment as curl does: per scheme, lowercase first', () => {
    const routes = proxyRoutes({ proxyUrl: '', noProxy: '' }, env);
    expect(routes).toEqual({
      https: 'http://lower:3128',
      http: 'http://plain:3128',
      noProxy: 'internal.test',
    });
    expect(proxyFor(new URL('https://api.example.com/v2'), routes)).toBe('http://lower:3128');
    expect(proxyFor(new URL('http://api.example.com/v2'), routes)).toBe('http://plain:3128');
    expect(proxyFor(new URL('https://a.internal.test/v2'), routes)).toBeNull();
  });

  it('lets the settings replace the environment, and none turn it off', () => {
    expect(proxyRoutes({ proxyUrl: 'http://set:8080', noProxy: 'x.test' }, env)).toEqual({
      https: 'http://set:8080',
      http: 'http://set:8080',
      noProxy: 'x.test',
    });
    const off = proxyRoutes({ proxyUrl: 'none', noProxy: '' }, env);
    expect(proxyFor(new URL('https://api.example.com/'), off)).toBeNull();
    expect(proxyRoutes({ proxyUrl: '', noProxy: '' }, {})).toEqual({ https: '', http: '', noProxy: '' });
  });

  it('refuses what is no proxy URL, naming where it came from', () => {
    expect(proxyUrlProblem('socks5://x:1080')).toMatch(/http:\/\/ or https:\/\//);
    expect(proxyUrlProblem('proxy:3128')).not.toBeNull();
    expect(proxyUrlProblem('http://proxy:3128')).toBeNull();
    expect(() => egressOf({ proxyUrl: '', noProxy: '', caFile: '' }, { HTTPS_PROXY: 'nope' })).toThrow(
      /^HTTPS_PROXY: the proxy URL is not a URL/,
    );
  });

  it('never shows the proxy password, and scrubs one from the environment out of later output', () => {
    expect(displayProxy('http://user:pw-from-env-9@proxy.test:3128')).toBe('http://proxy.test:3128');
    egressOf(
      { proxyUrl: '', noProxy: '', caFile: '' },
      { HTTPS_PROXY: 'http://user:pw-from-env-9@proxy.test:3128' },
    );
    expect(redactText('the proxy said pw-from-env-9')).not.toContain('pw-from-env-9');
  });

  it('adds the CAs of api.caFile to the system roots', () => {
    expect(egressOf({ proxyUrl: '', noProxy: '', caFile: '' }, {}).ca).toBeUndefined();
    expect(() => egressOf({ proxyUrl: '', noProxy: '', caFile: '/nonexistent/ca.pem' }, {})).toThrow(
      /ENOENT/,
    );
  });
});
