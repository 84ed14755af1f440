/** Which base the sandbox's upload and report URLs get: its own address, or the request's Host. */
import { fetchBaseUrl } from './http.js';

describe('fetchBaseUrl', () => {
  const printed = 'http://127.0.0.1:8080';

  test('on a wildcard address the URLs follow the Host the client used', () => {
    expect(fetchBaseUrl(printed, '0.0.0.0', 'sandbox:8080')).toBe('http://sandbox:8080');
    expect(fetchBaseUrl(printed, '0.0.0.0', 'localhost:8080')).toBe('http://localhost:8080');
    expect(fetchBaseUrl(printed, '::', '[::1]:8080')).toBe('http://[::1]:8080');
    expect(fetchBaseUrl(printed, '0.0.0.0', 'Sandbox:8080')).toBe('http://sandbox:8080');
  });

  test('on a named address they stay on it, whatever the Host', () => {
    expect(fetchBaseUrl(printed, '127.0.0.1', 'sandbox:8080')).toBe(printed);
    expect(fetchBaseUrl('http://10.0.0.5:8080', '10.0.0.5', 'other:1')).toBe('http://10.0.0.5:8080');
  });

  test('a Host that is not a bare host[:port] is not followed', () => {
    for (const host of [undefined, '', 'evil/path', 'user@evil:1', 'evil?x=1', 'evil#x', 'evil:99999'])
      expect(fetchBaseUrl(printed, '0.0.0.0', host)).toBe(printed);
  });
});
