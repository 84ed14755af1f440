/**
 * The stack's S3 store for integration tests: its endpoint, the dummy key pair it takes (sources
 * under test find it through the AWS default chain, here the environment: set on import), and a
 * scratch bucket a test fills and removes.
 */
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';

export const S3_ENDPOINT = process.env.DOCSTREAM_BLOBS_S3_ENDPOINT ?? 'http://localhost:9002';

process.env.AWS_ACCESS_KEY_ID ??= 'test';
process.env.AWS_SECRET_ACCESS_KEY ??= 'test';

export class ScratchBucket {
  readonly name: string;
  private readonly admin = new S3Client({ endpoint: S3_ENDPOINT, region: 'us-east-1', forcePathStyle: true });
  private readonly keys = new Set<string>();

  constructor(prefix: string) {
    this.name = `${prefix}-${Date.now()}-${randomBytes(3).toString('hex')}`;
  }

  async create(): Promise<this> {
    await this.admin.send(new CreateBucketCommand({ Bucket: this.name }));
    return this;
  }

  async put(key: string, body: Buffer, contentType?: string): Promise<void> {
    this.keys.add(key);
    await this.admin.send(
      new PutObjectCommand({ Bucket: this.name, Key: key, Body: body, ContentType: contentType }),
    );
  }

  /** Deletes what was put and the bucket. */
  async remove(): Promise<void> {
    for (const key of this.keys)
      await this.admin.send(new DeleteObjectCommand({ Bucket: this.name, Key: key }));
    await this.admin.send(new DeleteBucketCommand({ Bucket: this.name }));
    this.admin.destroy();
  }
}
