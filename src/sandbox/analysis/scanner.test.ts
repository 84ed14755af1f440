import { createHash } from 'node:crypto';
import { UploadScanner } from './scanner.js';

function scanInChunks(text: string, size: number) {
  const scanner = new UploadScanner();
  const bytes = Buffer.from(text, 'latin1');
  for (let i = 0; i < bytes.length; i += size) scanner.update(bytes.subarray(i, i + size));
  return { result: scanner.finish(), bytes };
}

describe('UploadScanner', () => {
  const doc = [
    '%PDF-1.4',
    '1 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] >> endobj',
    '2 0 obj << /Type /Page >> endobj',
    '3 0 obj << /Type/Page >> endobj',
    '4 0 obj << /Producer (Adobe Photoshop \\(CS6\\)) /CreationDate (D:20200101000000Z) >> endobj',
    '%%EOF',
    '5 0 obj << /ModDate (D:20240101000000Z) >> endobj',
    '%%EOF',
    'x'.repeat(5000),
  ].join('\n');

  test.each([1, 3, 17, 64, 1000, 100000])('finds the same facts whatever the chunk size (%i)', (size) => {
    const { result, bytes } = scanInChunks(doc, size);
    expect(result.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(result.size).toBe(bytes.length);
    expect(result.eofCount).toBe(2);
    expect(result.pageObjects).toBe(2);
    expect(result.info).toEqual({
      Producer: 'Adobe Photoshop (CS6)',
      CreationDate: 'D:20200101000000Z',
      ModDate: 'D:20240101000000Z',
    });
    expect(result.head.subarray(0, 8).toString()).toBe('%PDF-1.4');
  });
});
