/**
 * Lets a quiet kafkajs connection forget the buffer its last response came in. kafkajs 2.2.4's
 * `Connection.processData` (src/network/connection.js) keeps the bytes that follow each response as
 * a slice of the buffer they were read into (`this.chunks = [decoder.readAll()]`). When nothing
 * follows, the slice is empty but still holds that whole buffer, for as long as the connection reads
 * nothing more. After a restore, that is the state reader's last fetch response, a whole fetch's worth
 * of external memory per instance, kept while its partitions stay paused (docs/performance.md).
 *
 * The replacement runs the library's own `processData` and then drops an empty remainder; a
 * remainder with bytes in it (the start of the next response) stays as the library left it.
 */
import { internalsPatchable, kafkajsInternal } from './kafkajs-internals.js';
import { optimisationOn } from '../util/optimisations.js';

/** The fields of kafkajs's Connection that its response framing uses. */
export interface FramingConnection {
  chunks: Buffer[];
  bytesBuffered: number;
  processData(rawData: Buffer): unknown;
}

/** kafkajs's Connection class (the module its brokers load: same path, same module). */
export function connectionClass(): { prototype: FramingConnection } {
  return kafkajsInternal('network/connection.js');
}

let fixed = false;

/** Puts the replacement on kafkajs's Connection, once per process (on kafkajs 2.2.4 only). */
export function releaseEmptyRemainders(): void {
  if (fixed) return;
  fixed = true;
  if (!internalsPatchable() || !optimisationOn('kafkajs-response-remainder')) return;
  const proto = connectionClass().prototype;
  const processData = proto.processData;
  proto.processData = function (this: FramingConnection, rawData: Buffer) {
    const result = processData.call(this, rawData);
    if (this.bytesBuffered === 0 && this.chunks.length > 0) this.chunks = [];
    return result;
  };
}
