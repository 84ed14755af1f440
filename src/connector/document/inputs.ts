/**
 * The input records of admitted documents, read back from the input topic by their state's pointer
 * (`InputPort`): the state keeps no copy of the input, so a resumed document gets its identity, blob
 * and characteristics here, and a late dead letter its original bytes.
 */
import type { RecordReader } from '../../kafka/record-reader.js';
import { decodeDocumentArrived, type AvroDecoder } from '../../serde/input.js';
import { sourceOf } from './arrivals.js';
import type { InputPointer } from '../state/document-state.js';
import type { InputPort } from './ports.js';
import type { ArrivalEvent, SourceRecord } from '../types.js';

export class InputRecords implements InputPort {
  constructor(
    private readonly reader: Pick<RecordReader, 'readMany' | 'topic'>,
    private readonly decoder: AvroDecoder,
  ) {}

  async recall(
    pointers: InputPointer[],
  ): Promise<Array<{ source: SourceRecord; event: ArrivalEvent } | null>> {
    const sources = await this.readSources(pointers);
    return Promise.all(
      sources.map(async (source) => {
        if (!source) return null;
        // It was admitted once, so it decodes; a registry outage throws (the caller retries).
        const decoded = await decodeDocumentArrived(source.value, this.decoder);
        return decoded.ok ? { source, event: decoded.event } : null;
      }),
    );
  }

  async read(pointer: InputPointer): Promise<SourceRecord | null> {
    const [source] = await this.readSources([pointer]);
    return source ?? null;
  }

  private async readSources(pointers: InputPointer[]): Promise<Array<SourceRecord | null>> {
    // Only the configured input topic is read back; a pointer elsewhere (topic renamed) reads as gone.
    const wanted = pointers.map((p, i) => ({ p, i })).filter(({ p }) => p.topic === this.reader.topic);
    const records = await this.reader.readMany(wanted.map(({ p }) => p));
    const out: Array<SourceRecord | null> = pointers.map(() => null);
    wanted.forEach(({ i }, j) => {
      const record = records[j];
      out[i] = record ? sourceOf(record) : null;
    });
    return out;
  }
}
