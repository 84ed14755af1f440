/** The local stack's secured Kafka listeners and TLS material, for the tests that use them. */
import { defaultStackOptions, readSecureListeners, type SecureListeners } from '../../src/stack/index.js';

export function secureListeners(): SecureListeners {
  const s = readSecureListeners(defaultStackOptions());
  if (!s) {
    throw new Error(
      'the local stack has no secured listeners: start it with `docstream stack up` from this version (run `docstream stack down` first if an older one runs)',
    );
  }
  return s;
}
