/**
 * TLS material named by settings (a CA bundle, a client certificate and its key, a passphrase),
 * read and checked once at start-up. Every problem is reported against the setting that names
 * the file, so an operator knows which value to fix: a missing file, a file that is not PEM, a key
 * whose passphrase is wrong, a certificate that does not belong to the key.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SettingError } from './setting-error.js';

/** Which settings the files come from, for messages (e.g. `kafka.sslCaFile`). */
export interface TlsSettingNames {
  caFile: string;
  certFile: string;
  keyFile: string;
  keyPassword: string;
}

export interface TlsFiles {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  keyPassword?: string;
}

/** What Node's `tls.connect` takes (and kafkajs' `ssl`, and an undici/https agent's `connect`). */
export interface TlsMaterial {
  ca?: string[];
  cert?: string;
  key?: string;
  passphrase?: string;
}

function readPem(file: string, setting: string, kind: 'CERTIFICATE' | 'PRIVATE KEY'): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new SettingError(setting, `cannot read ${file} (${(err as NodeJS.ErrnoException).code})`);
  }
  const marker =
    kind === 'CERTIFICATE' ? /-----BEGIN CERTIFICATE-----/ : /-----BEGIN [A-Z ]*PRIVATE KEY-----/;
  if (!marker.test(text)) {
    throw new SettingError(setting, `${file} holds no PEM ${kind.toLowerCase()}`);
  }
  return text;
}

/** Every certificate of a PEM bundle, one string each. */
export function pemCertificates(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/**
 * Reads and checks the files. A certificate needs its key (and the reverse); an encrypted key needs
 * its passphrase; the key must be the certificate's. Nothing is read when no file is named.
 */
export function loadTlsFiles(files: TlsFiles, names: TlsSettingNames): TlsMaterial {
  const material: TlsMaterial = {};
  if (files.caFile) {
    const bundle = readPem(files.caFile, names.caFile, 'CERTIFICATE');
    const certs = pemCertificates(bundle);
    for (const pem of certs) {
      try {
        new X509Certificate(pem);
      } catch (err) {
        throw new SettingError(
          names.caFile,
          `${files.caFile}: not a valid certificate (${(err as Error).message})`,
        );
      }
    }
    material.ca = certs;
  }
  if (Boolean(files.certFile) !== Boolean(files.keyFile)) {
    const missing = files.certFile ? names.keyFile : names.certFile;
    const given = files.certFile ? names.certFile : names.keyFile;
    throw new SettingError(
      missing,
      `is required with ${given} (a client certificate and its key go together)`,
    );
  }
  if (files.certFile && files.keyFile) {
    const cert = readPem(files.certFile, names.certFile, 'CERTIFICATE');
    const key = readPem(files.keyFile, names.keyFile, 'PRIVATE KEY');
    let privateKey;
    try {
      privateKey = createPrivateKey({ key, ...(files.keyPassword ? { passphrase: files.keyPassword } : {}) });
    } catch (err) {
      const encrypted = /ENCRYPTED/.test(key);
      if (encrypted) {
        throw new SettingError(
          names.keyPassword,
          files.keyPassword
            ? `does not decrypt ${files.keyFile}`
            : `${files.keyFile} is encrypted: set ${names.keyPassword}`,
        );
      }
      throw new SettingError(
        names.keyFile,
        `${files.keyFile}: not a usable private key (${(err as Error).message})`,
      );
    }
    let leaf: X509Certificate;
    try {
      leaf = new X509Certificate(pemCertificates(cert)[0] ?? cert);
    } catch (err) {
      throw new SettingError(
        names.certFile,
        `${files.certFile}: not a valid certificate (${(err as Error).message})`,
      );
    }
    if (!leaf.checkPrivateKey(privateKey)) {
      throw new SettingError(
        names.keyFile,
        `${files.keyFile} is not the key of the certificate in ${names.certFile}`,
      );
    }
    material.cert = cert;
    material.key = key;
    if (files.keyPassword) material.passphrase = files.keyPassword;
  }
  return material;
}
