import { imageSize, parsePdfDate } from './inspect.js';

describe('parsePdfDate', () => {
  test.each([
    ['D:20240131120000Z', '2024-01-31T12:00:00.000Z'],
    ["D:20240131120000+02'00'", '2024-01-31T10:00:00.000Z'],
    ['D:2024', '2024-01-01T00:00:00.000Z'],
  ])('%s', (input, iso) => {
    expect(parsePdfDate(input)?.toISOString()).toBe(iso);
  });

  test('not a date gives null', () => {
    expect(parsePdfDate('yesterday')).toBeNull();
    expect(parsePdfDate(undefined)).toBeNull();
  });
});

describe('imageSize', () => {
  test('reads PNG IHDR and JPEG SOF', () => {
    const png = Buffer.alloc(24);
    png.writeUInt32BE(640, 16);
    png.writeUInt32BE(480, 20);
    expect(imageSize(png, 'image/png')).toEqual({ width: 640, height: 480 });
    const jpeg = Buffer.from([
      0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0x2c, 0x02, 0x58,
      0x03,
    ]);
    expect(imageSize(jpeg, 'image/jpeg')).toEqual({ width: 600, height: 300 });
  });
});
