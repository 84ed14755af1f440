/**
 * Making a dead letter fit its topic. A dead letter carries the original record's bytes, so a record
 * refused as too large would make a dead letter refused the same way and the partition would never move
 * on. The dead letter keeps its pointer to the original (source topic, partition and offset, which the
 * schema always carries) and gives up bytes in this order until it fits: the original value, the
 * original key, the attributes, the message text. What was cut is said in `message`.
 */
import type { DeadLetterValue } from './types.js';

interface FittedDeadLetter {
  deadLetter: DeadLetterValue;
  /** Bytes of the original value and key before they were cut; null when nothing was cut. */
  cut: { valueBytes: number; keyBytes: number } | null;
}

/** Space left for the varint lengths that shrink with the cut. */
const MARGIN = 16;
const MESSAGE_KEEP = 2000;

/**
 * Returns the dead letter as it is when `size(dead letter) <= maxBytes`, else a cut copy that fits, or null
 * when even the bare dead letter does not fit (the caller logs and counts it, and moves on).
 * `size` measures a dead letter as it will be sent (encoded value plus key and headers).
 */
export function fitDeadLetter(
  deadLetter: DeadLetterValue,
  maxBytes: number,
  size: (deadLetter: DeadLetterValue) => number,
): FittedDeadLetter | null {
  if (size(deadLetter) <= maxBytes) return { deadLetter, cut: null };
  const valueBytes = deadLetter.value?.length ?? 0;
  const keyBytes = deadLetter.key?.length ?? 0;
  const pointer = `${deadLetter.source_topic}/${deadLetter.source_partition}@${deadLetter.source_offset}`;
  const note = (value: number, key: number) =>
    ` [cut to fit the dead-letter topic: value ${valueBytes} → ${value} bytes, key ${keyBytes} → ${key} bytes; the original is ${pointer}]`;
  let current: DeadLetterValue = { ...deadLetter, message: deadLetter.message + note(0, keyBytes) };
  // The value first: keep as much of its beginning as fits (it often shows what the record was).
  const withoutValue = { ...current, value: Buffer.alloc(0) };
  const spare = maxBytes - size(withoutValue) - MARGIN;
  if (spare >= 0) {
    const kept = Math.min(valueBytes, spare);
    current = {
      ...deadLetter,
      value: deadLetter.value === null ? null : deadLetter.value.subarray(0, kept),
      message: deadLetter.message + note(kept, keyBytes),
    };
    if (size(current) <= maxBytes) return { deadLetter: current, cut: { valueBytes, keyBytes } };
  }
  const steps: Array<(l: DeadLetterValue) => DeadLetterValue> = [
    (l) => ({
      ...l,
      value: deadLetter.value === null ? null : Buffer.alloc(0),
      message: deadLetter.message + note(0, keyBytes),
    }),
    (l) => ({
      ...l,
      key: deadLetter.key === null ? null : Buffer.alloc(0),
      message: deadLetter.message + note(0, 0),
    }),
    (l) => ({ ...l, attributes: {} }),
    (l) => ({ ...l, message: deadLetter.message.slice(0, MESSAGE_KEEP) + note(0, 0) }),
  ];
  current = deadLetter;
  for (const step of steps) {
    current = step(current);
    if (size(current) <= maxBytes) return { deadLetter: current, cut: { valueBytes, keyBytes } };
  }
  return null;
}
