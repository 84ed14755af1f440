/**
 * Local check of Avro schema evolution, the same question the registry answers for BACKWARD:
 * can a reader using `next` read data written with `previous`? Lets a unit test catch a breaking
 * edit of an `.avsc` file before any registry refuses it.
 */
import avro from 'avsc';

/** Null when `next` can read data written with `previous`; otherwise the reason. */
export function backwardIncompatibility(next: avro.Schema, previous: avro.Schema): string | null {
  try {
    avro.Type.forSchema(next).createResolver(avro.Type.forSchema(previous));
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
