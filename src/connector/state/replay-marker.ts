/** The replay marker record: its reserved key and its binary codec. */
import { Reader, Writer } from './binary.js';
import { StateRecordError } from './document-state.js';

/**
 * The reserved key of a partition's replay marker (an event id never starts with a control
 * character: such ids are dead-lettered as invalid).
 */
export const REPLAY_KEY = '\u0000replay';

/**
 * Written by `docstream replay` into each state partition when it moves the group back: input records
 * below `until_offset` (the group's committed offset before the reset) are a replay, and a finished
 * document re-emits its results once per generation. Any other redelivery of a finished document's
 * input (a crash before the commit) publishes nothing again.
 */
export interface ReplayMarker {
  generation: number;
  until_offset: string;
  at: number;
}

const MAX_GENERATION = 0xffff;

export function encodeReplayMarker(marker: ReplayMarker): Buffer {
  if (!Number.isInteger(marker.generation) || marker.generation < 1 || marker.generation > MAX_GENERATION)
    throw new StateRecordError(`replay generation ${marker.generation} is out of range 1-${MAX_GENERATION}`);
  return new Writer().u8(0x52).u16(marker.generation).u64(marker.until_offset).f64(marker.at).done();
}

export function decodeReplayMarker(value: Buffer): ReplayMarker {
  const r = new Reader(value);
  if (r.u8() !== 0x52) throw new StateRecordError('not a replay marker');
  const marker = { generation: r.u16(), until_offset: r.u64(), at: r.f64() };
  r.end();
  return marker;
}

export { MAX_GENERATION };
