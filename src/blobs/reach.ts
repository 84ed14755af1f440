/**
 * Whether the blob sources a policy allows can be reached with this machine's credentials, for
 * `docstream config check --connect`: HeadBucket of each S3 bucket (the SDK's credential chain, the
 * policy's endpoint and region), and each http(s) host's name resolved and its addresses judged as
 * the http source judges them. Nothing is read: an object's rights (s3:GetObject) cannot be tried
 * without the key of an object.
 */
import { lookup } from 'node:dns/promises';
import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { classifyAddress, isAddressAllowed } from './address.js';
import type { BlobPolicy } from './policy.js';

export type ReachAnswer = { ok: true; detail: string } | { ok: false; problem: string };

/** HeadBucket: the bucket exists, the endpoint answers, and the credentials may list it. */
export async function headBucket(
  policy: BlobPolicy,
  bucket: string,
  timeoutMs: number,
): Promise<ReachAnswer> {
  const client = new S3Client({
    region: policy.s3Region,
    endpoint: policy.s3Endpoint === '' ? undefined : policy.s3Endpoint,
    forcePathStyle: policy.s3ForcePathStyle,
    maxAttempts: 1,
    requestHandler: { connectionTimeout: timeoutMs, requestTimeout: timeoutMs },
  });
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucket }), {
      abortSignal: AbortSignal.timeout(timeoutMs),
    });
    return { ok: true, detail: `s3://${bucket} answers HeadBucket` };
  } catch (error) {
    const e = error as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
    const status = e.$metadata?.httpStatusCode;
    if (status === 404 || e.name === 'NotFound' || e.name === 'NoSuchBucket') {
      return {
        ok: false,
        problem: `s3://${bucket} does not exist at this endpoint: check blobs.s3Buckets, blobs.s3Endpoint and blobs.s3Region`,
      };
    }
    if (status === 403) {
      return {
        ok: false,
        problem: `s3://${bucket}: the credentials may not list the bucket (403 to HeadBucket): grant s3:ListBucket on it (docstream reads with s3:GetObject), or check the AWS credentials this process finds`,
      };
    }
    if (status === 301) {
      return {
        ok: false,
        problem: `s3://${bucket} is in another region than blobs.s3Region (${policy.s3Region})`,
      };
    }
    if (/credential/i.test(`${e.name} ${e.message}`)) {
      return {
        ok: false,
        problem: `s3://${bucket}: no AWS credentials found (AWS_ACCESS_KEY_ID, a profile, web identity or instance role)`,
      };
    }
    const where = policy.s3Endpoint === '' ? 'AWS S3' : policy.s3Endpoint;
    return {
      ok: false,
      problem: `s3://${bucket}: ${where} did not answer HeadBucket (${e.name ?? 'error'}: ${e.message ?? ''})`,
    };
  } finally {
    client.destroy();
  }
}

/** The host of a `host` or `host:port` entry of blobs.httpHosts. */
function hostOf(entry: string): string {
  const v6 = /^\[([^\]]+)\]/.exec(entry);
  if (v6) return v6[1]!;
  const colon = entry.lastIndexOf(':');
  return colon > 0 && entry.indexOf(':') === colon ? entry.slice(0, colon) : entry;
}

/** The host's name resolves here, to addresses the http source may fetch from. */
export async function resolveHttpHost(
  policy: BlobPolicy,
  entry: string,
  timeoutMs: number,
): Promise<ReachAnswer> {
  const host = hostOf(entry);
  let timer: NodeJS.Timeout | undefined;
  try {
    const addresses = await Promise.race([
      lookup(host, { all: true }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    const refused = addresses.filter(
      (a) => !isAddressAllowed(classifyAddress(a.address), policy.allowPrivateNetworks),
    );
    if (refused.length === addresses.length) {
      return {
        ok: false,
        problem: `${entry} resolves to ${addresses.map((a) => a.address).join(', ')}, which the http source refuses (${classifyAddress(refused[0]!.address)}): set blobs.allowPrivateNetworks to true for a host on a private network`,
      };
    }
    return { ok: true, detail: `${entry} resolves to ${addresses.map((a) => a.address).join(', ')}` };
  } catch (error) {
    return {
      ok: false,
      problem: `${entry} does not resolve here (${(error as Error).message}): check blobs.httpHosts`,
    };
  } finally {
    clearTimeout(timer);
  }
}
