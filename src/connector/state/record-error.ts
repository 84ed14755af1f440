/** A state record that cannot be read. The state reader skips it and says so, without its contents. */
export class StateRecordError extends Error {
  override name = 'StateRecordError';
}
